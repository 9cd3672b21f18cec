//! The meaning model as the server runs it (the `agentdir-meaning` crate): loaded once, shared
//! by every thread, or not loaded at all (the mode is words, or there is no weights file), in
//! which case every search is by words and the reason is told in `/healthz`. It reads needs
//! (`service::finding`: the full model within a client's fair share, `app::shares`; the quick
//! encoder past it, `app::quick_encoder`) and embeds profiles (`service::vectors`); what each
//! agent's vector is lives in SQLite (`store::vectors`) and in memory (`derived::vectors`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentdir_meaning::{MODEL_ID, NeedTokens, Quantized};

use super::quick_encoder::{QuickEncoder, QuickStatus};
use super::shares::ShareSize;
use crate::derived::vectors::Vectors;

/// How `q` finds agents (`agentdir serve --search-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum SearchMode {
    /// Words and meaning, fused, then weighed with the evidence: the product's behaviour.
    #[default]
    Combined,
    /// Words only; the model is not loaded at all.
    Words,
    /// Meaning only (vector similarity above the threshold), with every filter; no word matching.
    Meaning,
}

/// Settings of search by meaning.
#[derive(Debug, Clone)]
pub struct ModelSettings {
    pub mode: SearchMode,
    /// The weights file; the build's copy (see `meaning/build.rs`) when `None`.
    pub model_path: Option<PathBuf>,
    /// Each client network's share of the model's time for reading needs.
    pub share: ShareSize,
    /// Whether the quick encoder's table is filled in the background (see `quick_encoder`).
    pub quick_fill: bool,
}

impl Default for ModelSettings {
    fn default() -> Self {
        ModelSettings {
            mode: SearchMode::default(),
            model_path: None,
            share: ShareSize::default(),
            quick_fill: true,
        }
    }
}

/// The model, when loaded, and the mode searches run in.
pub struct Model {
    pub mode: SearchMode,
    model: Option<Arc<agentdir_meaning::Model>>,
    /// The quick need encoder, with the model.
    quick: Option<Arc<QuickEncoder>>,
    /// The model's name when loaded, otherwise why searches use words only.
    detail: String,
}

impl Drop for Model {
    fn drop(&mut self) {
        if let Some(quick) = &self.quick {
            quick.stop();
        }
    }
}

/// Whether meaning is on, and why not.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ModelStatus {
    /// `combined`, `words` or `meaning`: the mode asked for.
    pub mode: &'static str,
    /// True when the model is loaded and searches use it.
    pub model_loaded: bool,
    /// The model's name when loaded, otherwise why searches use words only.
    pub detail: String,
    /// Public agents whose current profile has a vector / public agents.
    pub agents_with_vectors: usize,
    pub agents: usize,
    /// Visible calls with a vector / visible calls: the calls the call worker has still to
    /// read are found by words only until it has.
    pub calls_with_vectors: usize,
    pub calls: usize,
    /// The quick need encoder's table, when the model is loaded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quick_encoder: Option<QuickStatus>,
}

impl Model {
    /// Loads the model unless the mode is `words`, and the quick encoder's table kept in
    /// `data_dir`; a model that cannot be loaded leaves the server searching by words, which it
    /// logs once here.
    pub fn open(settings: &ModelSettings, data_dir: &Path) -> Model {
        let loaded = match settings.mode {
            SearchMode::Words => Err("search mode is words: the model is not loaded".to_string()),
            _ => match settings
                .model_path
                .clone()
                .or_else(|| agentdir_meaning::built_in_weights().map(Into::into))
            {
                None => Err(format!(
                    "no model file: {}",
                    agentdir_meaning::unavailable_reason().unwrap_or("set AGENTDIR_MODEL_PATH")
                )),
                Some(path) => {
                    agentdir_meaning::Model::load(&path).map_err(|e| e.to_string()).map(|m| (m, path))
                }
            },
        };
        let (model, detail) = match loaded {
            Ok((model, path)) => {
                tracing::info!(model = MODEL_ID, path = %path.display(), "meaning model loaded");
                (Some(Arc::new(model)), MODEL_ID.to_string())
            }
            Err(why) => {
                tracing::warn!(reason = %why, "search by meaning is off: searches use words only");
                (None, why)
            }
        };
        let quick = model.as_ref().map(|m| Arc::new(QuickEncoder::open(m, data_dir)));
        Model { mode: settings.mode, model, quick, detail }
    }

    /// True when searches can use meaning.
    pub fn enabled(&self) -> bool {
        self.model.is_some()
    }

    /// Whether meaning is on, and how many of the public agents have their vector.
    pub fn status(&self, vectors: &Vectors) -> ModelStatus {
        let (agents_with_vectors, agents) = vectors.counts();
        let (calls_with_vectors, calls) = vectors.calls.counts();
        ModelStatus {
            calls_with_vectors,
            calls,
            mode: self.mode.into(),
            model_loaded: self.enabled(),
            detail: self.detail.clone(),
            agents_with_vectors,
            agents,
            quick_encoder: self.quick.as_ref().map(|q| q.status()),
        }
    }

    /// A need's tokens as the model would read them (the tokenizer only: what reading it
    /// costs), or `None` without a model or when the tokenizer fails.
    pub fn need_tokens(&self, text: &str) -> Option<NeedTokens> {
        self.model
            .as_ref()?
            .need_tokens(text)
            .map_err(|e| tracing::warn!(error = %e, "reading a need's tokens failed"))
            .ok()
    }

    /// The longest piece the tokenizer reads `word` in, as a share of its characters (the
    /// word-start mark left out): 1.0 for a word the model's vocabulary holds whole, well under
    /// for letters it can only spell out. `None` without a model or when the tokenizer fails.
    pub fn whole_share(&self, word: &str) -> Option<f32> {
        let model = self.model.as_ref()?;
        let chars = word.chars().count();
        let ids = model.tokens(word, agentdir_meaning::Prefix::None).ok()?;
        let vocabulary = model.vocabulary();
        let longest = ids
            .iter()
            .filter_map(|&id| vocabulary.piece(id))
            .map(|(bytes, _)| String::from_utf8_lossy(bytes).trim_start_matches('\u{2581}').chars().count())
            .max()?;
        (chars > 0).then(|| longest as f32 / chars as f32)
    }

    /// The vector of a need from the full model, or `None` without a model or when it fails.
    pub fn embed_need(&self, need: &NeedTokens) -> Option<Quantized> {
        let vector = self
            .model
            .as_ref()?
            .embed_need(need)
            .map_err(|e| tracing::warn!(error = %e, "embedding a need failed"))
            .ok()?;
        Some(Quantized::new(&vector))
    }

    /// The vector of a need from the quick encoder (never a model run), or `None` when it knows
    /// none of the need's tokens.
    pub fn quick_need(&self, text: &str) -> Option<Quantized> {
        self.quick.as_ref()?.embed_known(self.model.as_ref()?, &agentdir_meaning::need_part(text))
    }

    /// Notes a need the full model read, for its tokens to join the quick encoder's table.
    pub fn learn(&self, text: &str) {
        if let Some(quick) = &self.quick {
            quick.learn(&agentdir_meaning::need_part(text));
        }
    }

    /// Starts the quick encoder's background distilling (the whole vocabulary when `fill`).
    pub fn start_quick_encoder(&self, fill: bool) {
        if let (Some(quick), Some(model)) = (&self.quick, &self.model) {
            quick.start(model.clone(), fill);
        }
    }

    /// Distils the quick encoder's whole table now, on `threads` threads (benchmarks; the
    /// server fills it in the background). False without a model.
    pub fn fill_quick_encoder(&self, threads: usize) -> bool {
        let (Some(quick), Some(model)) = (&self.quick, &self.model) else { return false };
        quick.fill_now(model, threads)
    }

    /// The vectors of profile texts, or `None` without a model or when the model fails.
    pub fn embed_profiles(&self, texts: &[&str]) -> Option<Vec<Quantized>> {
        let vectors = self
            .model
            .as_ref()?
            .embed_passages(texts)
            .map_err(|e| tracing::warn!(error = %e, "embedding profiles failed"))
            .ok()?;
        Some(vectors.iter().map(|v| Quantized::new(v)).collect())
    }
}
