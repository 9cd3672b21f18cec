//! Compressed bodies of the public reads, kept by tag and encoding: a document that did not
//! change is compressed once per encoding, not once per request. Each encoding is its own
//! representation with its own strong `ETag` (the identity tag with `-gzip`, `-br` or `-zstd`
//! inside the quotes). Every other answer (keyed, MCP, errors) is compressed per request by
//! tower-http's `CompressionLayer` under the same size rule.

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::{HeaderMap, header};

/// Bodies smaller than this are sent as they are: compression would save little and cost a
/// round of work.
pub const MIN_BYTES: usize = 1024;
/// The compressed bodies kept, all encodings together (the oldest go first).
pub const CACHE_BYTES: usize = 32 * 1024 * 1024;
/// The gzip level, brotli quality and zstd level: fast settings that still shrink JSON about
/// five to ten times (a body is compressed once per version, but the first reader waits for it).
const GZIP_LEVEL: u32 = 6;
const BROTLI_QUALITY: u32 = 5;
const BROTLI_WINDOW: u32 = 22;
const ZSTD_LEVEL: i32 = 3;

/// An encoding the server sends, in the order it prefers them when a client takes several.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    Zstd,
    Br,
    Gzip,
}

impl Encoding {
    const PREFERRED: [Encoding; 3] = [Encoding::Zstd, Encoding::Br, Encoding::Gzip];

    pub fn token(self) -> &'static str {
        match self {
            Encoding::Zstd => "zstd",
            Encoding::Br => "br",
            Encoding::Gzip => "gzip",
        }
    }

    /// The encoding to send for the client's `Accept-Encoding` (RFC 9110 §12.5.3), or none: the
    /// coding it weighs highest (`q`, 1 when not given; `q=0` refuses; `*` stands for any coding
    /// not named), the server's preference among equal weights. No encoding when the client
    /// weighs `identity` above every coding it takes.
    pub fn negotiate(headers: &HeaderMap) -> Option<Encoding> {
        let mut weights: Vec<(String, f32)> = Vec::new();
        for value in headers.get_all(header::ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok()) {
            for item in value.split(',') {
                let mut parts = item.split(';').map(str::trim);
                let coding = parts.next().unwrap_or_default().to_ascii_lowercase();
                // The weight's name is case-insensitive (RFC 9110 §12.4.2): `Q=0` refuses too.
                let q = parts
                    .find_map(|p| {
                        p.split_once('=')
                            .filter(|(name, _)| name.trim().eq_ignore_ascii_case("q"))
                            .map(|(_, q)| q.trim().parse::<f32>().unwrap_or(1.0))
                    })
                    .unwrap_or(1.0);
                if !coding.is_empty() {
                    weights.push((coding, q));
                }
            }
        }
        let weight = |name: &str| weights.iter().find(|(c, _)| c == name).map(|(_, q)| *q);
        let (best, q) = Self::PREFERRED
            .into_iter()
            .map(|e| (e, weight(e.token()).or_else(|| weight("*")).unwrap_or(0.0)))
            .fold(None, |best: Option<(Encoding, f32)>, (e, q)| match best {
                Some((_, top)) if top >= q => best,
                _ => Some((e, q)),
            })?;
        let identity = weight("identity").unwrap_or(0.0);
        (q > 0.0 && q >= identity).then_some(best)
    }

    /// The strong tag of this encoding's representation of the identity tag `etag` (quoted).
    pub fn tag(self, etag: &str) -> String {
        match etag.strip_suffix('"') {
            Some(open) => format!("{open}-{}\"", self.token()),
            None => etag.to_owned(),
        }
    }

    fn compress(self, body: &[u8]) -> std::io::Result<Vec<u8>> {
        match self {
            Encoding::Gzip => {
                let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(GZIP_LEVEL));
                e.write_all(body)?;
                e.finish()
            }
            Encoding::Br => {
                let mut out = Vec::new();
                {
                    let mut w = brotli::CompressorWriter::new(&mut out, 4096, BROTLI_QUALITY, BROTLI_WINDOW);
                    w.write_all(body)?;
                }
                Ok(out)
            }
            Encoding::Zstd => zstd::bulk::compress(body, ZSTD_LEVEL),
        }
    }
}

/// Compressed bodies by identity tag and encoding, bounded by `CACHE_BYTES`.
#[derive(Clone, Default)]
pub struct Compressed(Arc<Mutex<Kept>>);

#[derive(Default)]
struct Kept {
    bodies: HashMap<(String, Encoding), Bytes>,
    order: VecDeque<(String, Encoding)>,
    bytes: usize,
}

impl Compressed {
    /// `body` (whose identity tag is `etag`) in `encoding`: kept from an earlier request, or
    /// compressed now and kept. `None` when compressing failed.
    pub async fn get(&self, etag: &str, encoding: Encoding, body: &Bytes) -> Option<Bytes> {
        let key = (etag.to_owned(), encoding);
        if let Some(hit) = self.lock().bodies.get(&key) {
            return Some(hit.clone());
        }
        let source = body.clone();
        // A large document (openapi.json) takes milliseconds: off the request threads.
        let out = tokio::task::spawn_blocking(move || encoding.compress(&source)).await.ok()?.ok()?;
        let out = Bytes::from(out);
        let mut kept = self.lock();
        if out.len() <= CACHE_BYTES && !kept.bodies.contains_key(&key) {
            kept.bytes += out.len();
            kept.bodies.insert(key.clone(), out.clone());
            kept.order.push_back(key);
            while kept.bytes > CACHE_BYTES {
                let Some(old) = kept.order.pop_front() else { break };
                if let Some(gone) = kept.bodies.remove(&old) {
                    kept.bytes -= gone.len();
                }
            }
        }
        Some(out)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn accept(v: &str) -> Option<Encoding> {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT_ENCODING, HeaderValue::from_str(v).expect("header"));
        Encoding::negotiate(&h)
    }

    #[test]
    fn the_preferred_accepted_encoding_is_chosen() {
        assert_eq!(accept("gzip, deflate, br, zstd"), Some(Encoding::Zstd));
        assert_eq!(accept("gzip, br"), Some(Encoding::Br));
        assert_eq!(accept("gzip"), Some(Encoding::Gzip));
        assert_eq!(accept("zstd;q=0, gzip;q=0.5"), Some(Encoding::Gzip));
        assert_eq!(accept("*"), Some(Encoding::Zstd));
        assert_eq!(accept("*, zstd;q=0"), Some(Encoding::Br));
        assert_eq!(accept("gzip;Q=0"), None);
        assert_eq!(accept("zstd; Q=0, br;q=0.0, gzip"), Some(Encoding::Gzip));
        assert_eq!(accept("identity"), None);
        // The client's weights come before the server's preference.
        assert_eq!(accept("br;q=0.1, gzip;q=1.0"), Some(Encoding::Gzip));
        assert_eq!(accept("zstd;q=0.5, br;q=0.8, gzip;q=0.8"), Some(Encoding::Br));
        assert_eq!(accept("*;q=0.2, gzip"), Some(Encoding::Gzip));
        assert_eq!(accept("identity;q=1, gzip;q=0.5"), None);
        assert_eq!(accept("identity;q=0.5, gzip"), Some(Encoding::Gzip));
        assert_eq!(accept("deflate"), None);
        assert_eq!(Encoding::negotiate(&HeaderMap::new()), None);
    }

    #[tokio::test]
    async fn a_body_is_compressed_once_per_tag_and_encoding() {
        let kept = Compressed::default();
        let body = Bytes::from("{\"agents\": []} ".repeat(200));
        let first = kept.get("\"t1\"", Encoding::Br, &body).await.expect("compressed");
        let again = kept.get("\"t1\"", Encoding::Br, &body).await.expect("kept");
        assert_eq!(first.as_ptr(), again.as_ptr(), "compressed again instead of kept");
        let gzip = kept.get("\"t1\"", Encoding::Gzip, &body).await.expect("compressed");
        assert_ne!(first, gzip);
        assert!(first.len() < body.len() / 10);
    }

    #[test]
    fn each_encoding_has_its_own_strong_tag() {
        assert_eq!(Encoding::Br.tag("\"abc\""), "\"abc-br\"");
        assert_eq!(Encoding::Gzip.tag("\"abc\""), "\"abc-gzip\"");
        assert_ne!(Encoding::Zstd.tag("\"abc\""), Encoding::Br.tag("\"abc\""));
    }
}
