//! The quick need encoder as the server runs it (`agentdir_meaning::NeedEncoder`): a need's
//! vector from a table of one row per token, ~0.1 ms of a core instead of the model's 2–6 ms,
//! for the needs the fair shares do not give the model (`app::shares`). On the request path it
//! never runs the model: a token not yet in the table is left out, and a need none of whose
//! tokens is known is not read this way at all.
//!
//! The table (~97 MB when whole) is read from `<data dir>/need-encoder.table` at start when
//! there. A thread of the lowest priority fills it: first the tokens of needs the model read
//! within their share (so a client's usual words are known when it next asks past its share),
//! then, unless `AGENTDIR_QUICK_ENCODER_FILL=0`, the whole vocabulary, most frequent pieces
//! first (~170 s of one core), saving the file as it goes and when it is done.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use agentdir_meaning::{DISTIL_BATCH, Model, NeedEncoder, Quantized, TABLE_FILE};

/// Needs whose tokens wait to be distilled; past this, more are not noted (the fill or a later
/// need will bring their tokens).
pub const PENDING_NEEDS: usize = 256;
/// The background fill saves the table after every this many tokens, so a restart keeps most
/// of the work.
pub const SAVE_EVERY_TOKENS: usize = 32_768;

pub struct QuickEncoder {
    encoder: NeedEncoder,
    /// Where the table is kept.
    path: PathBuf,
    pending: Mutex<VecDeque<String>>,
    wake: Condvar,
    stop: AtomicBool,
    /// Tokens in the table (kept after each distillation; counting them scans the table).
    known: AtomicUsize,
    /// The background fill of the whole vocabulary is under way.
    filling: AtomicBool,
}

/// What `/readyz` says of the quick encoder.
#[derive(Debug, Clone, serde::Serialize)]
pub struct QuickStatus {
    /// Tokens of the vocabulary in the table / in the vocabulary.
    pub tokens_distilled: usize,
    pub tokens: usize,
    /// The background fill of the vocabulary is under way.
    pub filling: bool,
}

impl QuickEncoder {
    /// The table saved in `data_dir`, or an empty one (a file of another model or encoder, or a
    /// damaged one, is set aside with a warning: the fill writes a new one).
    pub fn open(model: &Model, data_dir: &std::path::Path) -> QuickEncoder {
        let path = data_dir.join(TABLE_FILE);
        let encoder = match NeedEncoder::load(model, &path) {
            Ok(encoder) => encoder,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => NeedEncoder::new(model),
            Err(e) => {
                tracing::warn!(error = %e, path = %path.display(), "the quick encoder's table is not usable; it is filled again");
                NeedEncoder::new(model)
            }
        };
        let known = encoder.vocab_len() - encoder.missing();
        tracing::info!(tokens = known, of = encoder.vocab_len(), "quick need encoder ready");
        QuickEncoder {
            encoder,
            path,
            pending: Mutex::new(VecDeque::new()),
            wake: Condvar::new(),
            stop: AtomicBool::new(false),
            known: AtomicUsize::new(known),
            filling: AtomicBool::new(false),
        }
    }

    /// The need's vector from the table alone, with how many of its tokens were left out;
    /// `None` when it knows none of them (or the need is blank).
    pub fn embed_known(&self, model: &Model, text: &str) -> Option<Quantized> {
        let (vector, _missing) = self
            .encoder
            .embed_known(model, text)
            .map_err(|e| tracing::warn!(error = %e, "the quick encoder failed"))
            .ok()?;
        vector.iter().any(|x| *x != 0.0).then(|| Quantized::new(&vector))
    }

    /// Notes a need the model read, so that its tokens are distilled off the answer path.
    pub fn learn(&self, text: &str) {
        if self.known.load(Ordering::Relaxed) == self.encoder.vocab_len() {
            return;
        }
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if pending.len() < PENDING_NEEDS {
            pending.push_back(agentdir_meaning::read_part(text));
            self.wake.notify_one();
        }
    }

    pub fn status(&self) -> QuickStatus {
        QuickStatus {
            tokens_distilled: self.known.load(Ordering::Relaxed),
            tokens: self.encoder.vocab_len(),
            filling: self.filling.load(Ordering::Relaxed),
        }
    }

    /// Starts the thread that distils noted needs' tokens and, when `fill`, the vocabulary.
    pub fn start(self: &Arc<Self>, model: Arc<Model>, fill: bool) {
        let me = self.clone();
        let started =
            std::thread::Builder::new().name("quick-encoder".into()).spawn(move || me.distil(&model, fill));
        if let Err(e) = started {
            tracing::warn!(error = %e, "the quick encoder's fill did not start");
        }
    }

    /// Stops the thread at its next batch.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.wake.notify_all();
    }

    fn distil(&self, model: &Model, fill: bool) {
        agentdir_meaning::background_priority();
        let mut since_saved = 0;
        while !self.stop.load(Ordering::Relaxed) {
            let next = self.pending.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
            if let Some(text) = next {
                if let Err(e) = self.encoder.embed_raw(model, &text) {
                    tracing::warn!(error = %e, "distilling a need's tokens failed");
                }
                self.known.store(self.encoder.vocab_len() - self.encoder.missing(), Ordering::Relaxed);
                continue;
            }
            let missing = self.encoder.vocab_len() - self.known.load(Ordering::Relaxed);
            if fill && missing > 0 {
                self.filling.store(true, Ordering::Relaxed);
                let left = match self.encoder.fill_next(model, DISTIL_BATCH) {
                    Ok(left) => left,
                    Err(e) => {
                        tracing::warn!(error = %e, "the quick encoder's fill stopped");
                        self.filling.store(false, Ordering::Relaxed);
                        return;
                    }
                };
                since_saved += missing.saturating_sub(left);
                self.known.store(self.encoder.vocab_len() - left, Ordering::Relaxed);
                if left == 0 || since_saved >= SAVE_EVERY_TOKENS {
                    since_saved = 0;
                    self.save();
                }
                if left == 0 {
                    self.filling.store(false, Ordering::Relaxed);
                    tracing::info!(path = %self.path.display(), "the quick encoder's table is whole");
                }
                continue;
            }
            let pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            if pending.is_empty() && !self.stop.load(Ordering::Relaxed) {
                let _ = self.wake.wait_timeout(pending, Duration::from_secs(60));
            }
        }
    }

    /// Distils the whole table now on `threads` threads and saves it; false when it failed.
    pub fn fill_now(&self, model: &Model, threads: usize) -> bool {
        let filled = self.encoder.fill(model, threads, &self.stop);
        self.known.store(self.encoder.vocab_len() - self.encoder.missing(), Ordering::Relaxed);
        self.save();
        filled.is_ok_and(|whole| whole)
    }

    fn save(&self) {
        if let Err(e) = self.encoder.save(&self.path) {
            tracing::warn!(error = %e, path = %self.path.display(), "the quick encoder's table could not be saved");
        }
    }
}
