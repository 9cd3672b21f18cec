//! The C engine behind a safe handle.
// A build without the engine keeps the same API, whose calls then all report it missing.
#![cfg_attr(not(e5_engine), allow(dead_code, unused_imports))]

use std::ffi::{CString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};

use crate::{DIM, MAX_NEED_CHARS, MAX_PASSAGE_CHARS, WINDOW_TOKENS};

#[cfg(e5_engine)]
unsafe extern "C" {
    fn e5_load(path: *const c_char) -> *mut c_void;
    fn e5_free(m: *mut c_void);
    fn e5_dim(m: *const c_void) -> c_int;
    fn e5_embed_batch(
        m: *mut c_void,
        texts: *const *const c_char,
        n: c_int,
        is_query: c_int,
        out: *mut f32,
    ) -> c_int;
    fn e5_token_count(m: *mut c_void, text: *const c_char, is_query: c_int) -> c_int;
    fn e5_tokenize(
        m: *mut c_void,
        text: *const c_char,
        is_query: c_int,
        out: *mut c_int,
        cap: c_int,
    ) -> c_int;
    fn e5_vocab_size(m: *const c_void) -> c_int;
    fn e5_special(m: *const c_void, which: c_int) -> c_int;
    fn e5_piece(m: *const c_void, id: c_int, len: *mut c_int, score: *mut f32) -> *const c_char;
    fn e5_hidden(m: *mut c_void, ids: *const c_int, lens: *const c_int, nseg: c_int, out: *mut f32) -> c_int;
}

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// This build has no engine (the wheel could not be had when it was built).
    #[error("this build has no meaning engine: {0}")]
    NotBuilt(String),
    #[error("this CPU lacks AVX2/FMA/F16C, which this build of the engine needs")]
    Cpu,
    #[error("cannot load the model from {0}")]
    Load(PathBuf),
    #[error("the model failed to embed a text")]
    Embed,
}

/// Where the build put the weights, if it found them.
pub fn built_in_weights() -> Option<&'static Path> {
    let path = env!("AGENTDIR_MEANING_WEIGHTS");
    (!path.is_empty()).then(|| Path::new(path))
}

/// Why this build has no engine, if it has none.
pub fn unavailable_reason() -> Option<&'static str> {
    let why = env!("AGENTDIR_MEANING_UNAVAILABLE");
    (!why.is_empty()).then_some(why)
}

/// A loaded model. The engine only reads the model after loading (every call allocates its own
/// buffers), so one model serves any number of threads at once.
pub struct Model {
    raw: *mut c_void,
    /// The tokens of "query: " alone, read once at load: a need's tokens start with them.
    query_prefix: Vec<u32>,
}

// SAFETY: `e5_embed_batch` reads the mmapped model and writes only to buffers it allocates per
// call (checked in e5.c 0.3.0: no static or model state is written after `e5_load`).
unsafe impl Send for Model {}
unsafe impl Sync for Model {}

impl Model {
    /// Loads (memory-maps) the weights file; well under a second.
    pub fn load(path: &Path) -> Result<Model, ModelError> {
        if let Some(why) = unavailable_reason() {
            return Err(ModelError::NotBuilt(why.to_string()));
        }
        if !cpu_fits() {
            return Err(ModelError::Cpu);
        }
        load(path)
    }

    /// The vector of a need (a search), centred, unit length: [`Model::embed_need`] of its
    /// [`Model::need_tokens`], as the server reads a need.
    pub fn embed_query(&self, text: &str) -> Result<Vec<f32>, ModelError> {
        self.embed_need(&self.need_tokens(text)?)
    }

    /// The vectors of profiles, centred, unit length, in order. Texts are cut at
    /// [`MAX_PASSAGE_CHARS`].
    pub fn embed_passages(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ModelError> {
        self.embed_centred(texts, false)
    }

    /// The model's own vectors, as the model card describes them (for calibration).
    pub fn embed_raw(&self, texts: &[&str], query: bool) -> Result<Vec<Vec<f32>>, ModelError> {
        self.embed(texts, query)
    }

    /// How many tokens the model reads for `text` (the part [`read_part`] keeps), with the
    /// prefix and the two specials: what embedding it costs, which grows with this count.
    pub fn token_count(&self, text: &str, query: bool) -> Result<usize, ModelError> {
        self.count_tokens(text, query)
    }

    #[cfg(e5_engine)]
    fn count_tokens(&self, text: &str, query: bool) -> Result<usize, ModelError> {
        let text = c_text(text);
        // SAFETY: a NUL-terminated string alive for the call.
        let n = unsafe { e5_token_count(self.raw, text.as_ptr(), c_int::from(query)) };
        usize::try_from(n).map_err(|_| ModelError::Embed)
    }

    #[cfg(not(e5_engine))]
    fn count_tokens(&self, _text: &str, _query: bool) -> Result<usize, ModelError> {
        Err(ModelError::Embed)
    }

    /// The token ids of `text` (the part [`read_part`] keeps) after `prefix`, without the
    /// specials the model adds around them.
    pub fn tokens(&self, text: &str, prefix: Prefix) -> Result<Vec<u32>, ModelError> {
        self.tokenize(text, prefix)
    }

    fn tokenize(&self, text: &str, prefix: Prefix) -> Result<Vec<u32>, ModelError> {
        self.tokenize_part(&read_part(text), prefix)
    }

    /// The tokens of `part`, a text already cut to what the model is given.
    #[cfg(e5_engine)]
    fn tokenize_part(&self, part: &str, prefix: Prefix) -> Result<Vec<u32>, ModelError> {
        let text = CString::new(part).unwrap_or_default();
        let is_query = match prefix {
            Prefix::Query => 1,
            Prefix::Passage => 0,
            Prefix::None => -1,
        };
        // Never more tokens than bytes, prefix included.
        let cap = text.as_bytes().len() + 16;
        let mut ids: Vec<c_int> = vec![0; cap];
        let cap = c_int::try_from(cap).map_err(|_| ModelError::Embed)?;
        // SAFETY: a NUL-terminated string alive for the call; `ids` holds `cap` ints.
        let n = unsafe { e5_tokenize(self.raw, text.as_ptr(), is_query, ids.as_mut_ptr(), cap) };
        let n = usize::try_from(n).map_err(|_| ModelError::Embed)?;
        if n > ids.len() {
            return Err(ModelError::Embed);
        }
        ids.truncate(n);
        ids.into_iter().map(|id| u32::try_from(id).map_err(|_| ModelError::Embed)).collect()
    }

    #[cfg(not(e5_engine))]
    fn tokenize_part(&self, _part: &str, _prefix: Prefix) -> Result<Vec<u32>, ModelError> {
        Err(ModelError::Embed)
    }

    /// A need as the model reads it: its tokens after "query: " (of the part [`need_part`]
    /// keeps), cut at the model's own limit, one window of [`WINDOW_TOKENS`] with its two
    /// specials. What reading it costs grows with [`NeedTokens::cost`].
    pub fn need_tokens(&self, text: &str) -> Result<NeedTokens, ModelError> {
        let part = need_part(text);
        let mut ids = self.tokenize_part(&part, Prefix::Query)?;
        ids.truncate(WINDOW_TOKENS - 2);
        let prefix = ids.iter().zip(&self.query_prefix).take_while(|(a, b)| a == b).count();
        Ok(NeedTokens { ids, prefix, chinese: crate::chinese_share(&part) })
    }

    /// The vector of a need read by [`Model::need_tokens`], centred, unit length: the mean of
    /// the window's last hidden states with the specials weighing [`NEED_SPECIALS_WEIGHT`] and
    /// the prefix's tokens [`NEED_PREFIX_WEIGHT`], each of the need's own tokens 1.
    pub fn embed_need(&self, need: &NeedTokens) -> Result<Vec<f32>, ModelError> {
        self.embed_need_weighted(need, NEED_SPECIALS_WEIGHT, NEED_PREFIX_WEIGHT)
    }

    /// [`Model::embed_need`] with the specials and the prefix weighing `specials` and `prefix`:
    /// at 1 and 1, computed as the engine's own embedding computes it, so a need that fits in
    /// one window has, to the bit, the vector of the engine's mean.
    pub(crate) fn embed_need_weighted(
        &self,
        need: &NeedTokens,
        specials: f32,
        prefix: f32,
    ) -> Result<Vec<f32>, ModelError> {
        let Specials { bos, eos, .. } = self.vocabulary().specials();
        let mut sequence = Vec::with_capacity(need.ids.len() + 2);
        sequence.push(bos);
        sequence.extend_from_slice(&need.ids);
        sequence.push(eos);
        let states = self.hidden_states(&[&sequence])?;
        // As e5.c's embed_n: the positions' mean (summed in order, times 1/n), weighted by the
        // window's content length and divided by the total weight, then made unit length.
        let positions = sequence.len();
        let mut v = vec![0f32; DIM];
        for (i, state) in states.chunks_exact(DIM).enumerate() {
            let w = if i == 0 || i == positions - 1 {
                specials
            } else if i <= need.prefix {
                prefix
            } else {
                1.0
            };
            for (x, s) in v.iter_mut().zip(state) {
                *x += w * s;
            }
        }
        let inv = 1.0 / positions as f32;
        let weight = need.ids.len().max(1) as f32;
        let unweight = (1.0 / f64::from(weight)) as f32;
        for x in &mut v {
            *x = 0.0 + weight * (*x * inv);
            *x *= unweight;
        }
        let norm = v.iter().fold(0f32, |n, x| n + x * x);
        let norm = 1.0 / norm.max(1e-12).sqrt();
        v.iter_mut().for_each(|x| *x *= norm);
        crate::centre_by_share(&mut v, need.chinese, true);
        Ok(v)
    }

    /// The vocabulary: its size, its special ids, each piece's bytes and unigram log-probability.
    pub fn vocabulary(&self) -> Vocabulary<'_> {
        Vocabulary { model: self }
    }

    /// The final hidden state of every position of each sequence (specials as given, each read
    /// from position 0 on its own), [`DIM`] floats per position, in order: what the model's
    /// vector of a text is the mean of. An error, and nothing run, for no sequence, an empty
    /// one, one longer than the model reads or an id past its vocabulary.
    pub fn hidden_states(&self, sequences: &[&[u32]]) -> Result<Vec<f32>, ModelError> {
        self.hidden(sequences)
    }

    #[cfg(e5_engine)]
    fn hidden(&self, sequences: &[&[u32]]) -> Result<Vec<f32>, ModelError> {
        let ids: Vec<c_int> = sequences
            .iter()
            .flat_map(|s| s.iter())
            .map(|id| c_int::try_from(*id).map_err(|_| ModelError::Embed))
            .collect::<Result<_, _>>()?;
        let lens: Vec<c_int> = sequences
            .iter()
            .map(|s| c_int::try_from(s.len()).map_err(|_| ModelError::Embed))
            .collect::<Result<_, _>>()?;
        let n = c_int::try_from(sequences.len()).map_err(|_| ModelError::Embed)?;
        // The engine counts positions, and indexes their states, in C ints.
        if ids.len() > c_int::MAX as usize / DIM {
            return Err(ModelError::Embed);
        }
        let mut out = vec![0f32; ids.len() * DIM];
        // SAFETY: `ids` holds the sum of `lens` ids, `lens` holds `n` lengths and `out` that
        // many positions × DIM floats; the engine checks lengths and ids before reading.
        let rc = unsafe { e5_hidden(self.raw, ids.as_ptr(), lens.as_ptr(), n, out.as_mut_ptr()) };
        if rc != 0 || out.iter().any(|x| !x.is_finite()) {
            return Err(ModelError::Embed);
        }
        Ok(out)
    }

    #[cfg(not(e5_engine))]
    fn hidden(&self, _sequences: &[&[u32]]) -> Result<Vec<f32>, ModelError> {
        Err(ModelError::Embed)
    }

    fn embed_centred(&self, texts: &[&str], query: bool) -> Result<Vec<Vec<f32>>, ModelError> {
        let mut vectors = self.embed(texts, query)?;
        for (v, text) in vectors.iter_mut().zip(texts) {
            crate::centre(v, text, query);
        }
        Ok(vectors)
    }

    #[cfg(e5_engine)]
    fn embed(&self, texts: &[&str], query: bool) -> Result<Vec<Vec<f32>>, ModelError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let owned: Vec<CString> = texts.iter().map(|t| c_text(t)).collect();
        let ptrs: Vec<*const c_char> = owned.iter().map(|c| c.as_ptr()).collect();
        let mut out = vec![0f32; DIM * texts.len()];
        let n = c_int::try_from(texts.len()).map_err(|_| ModelError::Embed)?;
        // SAFETY: `ptrs` holds `n` NUL-terminated strings alive for the call; `out` holds
        // n × DIM floats (the dimension was checked at load).
        let rc = unsafe { e5_embed_batch(self.raw, ptrs.as_ptr(), n, c_int::from(query), out.as_mut_ptr()) };
        if rc != 0 || out.iter().any(|x| !x.is_finite()) {
            return Err(ModelError::Embed);
        }
        Ok(out.chunks(DIM).map(<[f32]>::to_vec).collect())
    }

    #[cfg(not(e5_engine))]
    fn embed(&self, _texts: &[&str], _query: bool) -> Result<Vec<Vec<f32>>, ModelError> {
        Err(ModelError::Embed)
    }
}

/// What the model reads before a text: the model card's "query: " and "passage: ", or nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prefix {
    Query,
    Passage,
    None,
}

/// The special token ids of the vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Specials {
    /// `<s>`, before every text.
    pub bos: u32,
    /// `</s>`, after every text.
    pub eos: u32,
    /// `<unk>`, for what no piece spells.
    pub unk: u32,
}

/// The model's SentencePiece vocabulary.
pub struct Vocabulary<'m> {
    model: &'m Model,
}

impl Vocabulary<'_> {
    /// Number of pieces; ids are `0..len()`.
    #[cfg(e5_engine)]
    pub fn len(&self) -> usize {
        // SAFETY: a loaded model.
        usize::try_from(unsafe { e5_vocab_size(self.model.raw) }).unwrap_or(0)
    }

    #[cfg(not(e5_engine))]
    pub fn len(&self) -> usize {
        0
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[cfg(e5_engine)]
    pub fn specials(&self) -> Specials {
        // SAFETY: a loaded model.
        let id = |which| u32::try_from(unsafe { e5_special(self.model.raw, which) }).unwrap_or(0);
        Specials { bos: id(0), eos: id(1), unk: id(3) }
    }

    #[cfg(not(e5_engine))]
    pub fn specials(&self) -> Specials {
        Specials { bos: 0, eos: 0, unk: 0 }
    }

    /// Piece `id`'s bytes (UTF-8, "▁" marking a word's start) and its unigram log-probability
    /// (how often the tokenizer's corpus used it): `None` past the vocabulary.
    #[cfg(e5_engine)]
    pub fn piece(&self, id: u32) -> Option<(&[u8], f32)> {
        let id = c_int::try_from(id).ok()?;
        let (mut len, mut score) = (0 as c_int, 0f32);
        // SAFETY: a loaded model; the engine checks `id` and returns NULL when out of range.
        let ptr = unsafe { e5_piece(self.model.raw, id, &mut len, &mut score) };
        if ptr.is_null() {
            return None;
        }
        let len = usize::try_from(len).ok()?;
        // SAFETY: the piece's `len` bytes lie in the model's mapping, alive as long as the model.
        Some((unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) }, score))
    }

    #[cfg(not(e5_engine))]
    pub fn piece(&self, _id: u32) -> Option<(&[u8], f32)> {
        None
    }
}

#[cfg(e5_engine)]
fn load(path: &Path) -> Result<Model, ModelError> {
    use std::os::unix::ffi::OsStrExt;
    let failed = || ModelError::Load(path.to_path_buf());
    // e5_load does not check the file is there before mapping it.
    if !path.is_file() {
        return Err(failed());
    }
    let c_path = CString::new(path.as_os_str().as_bytes()).map_err(|_| failed())?;
    // SAFETY: a NUL-terminated path; NULL is returned on any failure.
    let raw = unsafe { e5_load(c_path.as_ptr()) };
    if raw.is_null() {
        return Err(failed());
    }
    let mut model = Model { raw, query_prefix: Vec::new() };
    // SAFETY: `raw` is a loaded model.
    if usize::try_from(unsafe { e5_dim(raw) }).ok() != Some(DIM) {
        return Err(failed());
    }
    model.query_prefix = model.tokenize_part("", Prefix::Query).map_err(|_| failed())?;
    Ok(model)
}

#[cfg(not(e5_engine))]
fn load(_path: &Path) -> Result<Model, ModelError> {
    Err(ModelError::NotBuilt(unavailable_reason().unwrap_or_default().to_string()))
}

impl Drop for Model {
    fn drop(&mut self) {
        #[cfg(e5_engine)]
        // SAFETY: `raw` came from e5_load and is freed once.
        unsafe {
            e5_free(self.raw)
        };
    }
}

/// How much the two specials (`<s>`, `</s>`) weigh in a need's vector, against 1 for each of
/// the need's own tokens (the model's own mean gives every position 1): they say nothing of
/// what the need is about, and in a need of a few words they are a large share of its
/// positions. With [`NEED_PREFIX_WEIGHT`], chosen on the main judged set through the server
/// (docs/search.md, "How a need's vector is read"); profiles keep the model's own mean.
pub const NEED_SPECIALS_WEIGHT: f32 = 0.6;
/// How much each token of the `query:` prefix weighs in a need's vector (see
/// [`NEED_SPECIALS_WEIGHT`]). Weighing it 0 cost keyword and cross-language needs on the main
/// judged set: the model was trained with it there.
pub const NEED_PREFIX_WEIGHT: f32 = 0.3;

/// A need's tokens as the model reads them (see [`Model::need_tokens`]).
#[derive(Debug, Clone, PartialEq)]
pub struct NeedTokens {
    ids: Vec<u32>,
    /// How many of `ids`, from the first, are the `query:` prefix's.
    prefix: usize,
    /// The need's share of Chinese, for centring its vector.
    chinese: f32,
}

impl NeedTokens {
    /// Positions the model runs for the need, its two specials included: what its vector costs.
    pub fn cost(&self) -> u32 {
        u32::try_from(self.ids.len() + 2).unwrap_or(u32::MAX)
    }
}

/// The text as C sees it: NULs (which would end it early) become spaces, and it is cut to
/// [`MAX_PASSAGE_CHARS`] characters.
fn c_text(text: &str) -> CString {
    CString::new(read_part(text)).unwrap_or_default()
}

/// The part of `text` the model reads: cut to [`MAX_PASSAGE_CHARS`] characters, NULs (which
/// would end a C string early) read as spaces. Two texts with the same part have the same
/// vector, so whatever remembers vectors keys them by it.
pub fn read_part(text: &str) -> String {
    cut(text, MAX_PASSAGE_CHARS)
}

/// The part of a need the tokenizer is given: [`MAX_NEED_CHARS`] characters, NULs read as
/// spaces, the Chinese names it spells in Latin letters written in Chinese
/// ([`crate::read_names`]), and, for a short English need, the Chinese names of the services
/// it names added at its end ([`crate::chinese_service_names`]). The model then reads as much
/// of it as fits in one window ([`Model::need_tokens`]), so two needs with the same part have
/// the same vector.
pub fn need_part(text: &str) -> String {
    let part = cut(text, MAX_NEED_CHARS);
    let services = crate::glossary::chinese_service_names(&part);
    let mut read = match crate::read_names(&part) {
        std::borrow::Cow::Borrowed(_) => part,
        std::borrow::Cow::Owned(read) => read,
    };
    if let Some(services) = services {
        read.push(' ');
        read.push_str(&services);
    }
    read
}

fn cut(text: &str, chars: usize) -> String {
    text.chars().take(chars).map(|c| if c == '\0' { ' ' } else { c }).collect()
}

#[cfg(all(e5_avx2, target_arch = "x86_64"))]
fn cpu_fits() -> bool {
    std::is_x86_feature_detected!("avx2")
        && std::is_x86_feature_detected!("fma")
        && std::is_x86_feature_detected!("f16c")
}

#[cfg(not(all(e5_avx2, target_arch = "x86_64")))]
fn cpu_fits() -> bool {
    true
}
