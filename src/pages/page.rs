//! A page as sent: its bytes, a strong ETag derived from them, and the headers every page
//! carries (a Content-Security-Policy that runs no script at all, `Vary: Accept-Language`,
//! revalidation with `If-None-Match`). And the pages kept in memory: a card or a call page is
//! rendered once per language for each version of the document it shows.

use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use lru::LruCache;
use sha2::{Digest, Sha256};

use super::lang::Lang;
use crate::derived::documents::DocumentKey;

/// No script of any kind, no inline style, nothing fetched but the page's own stylesheet; forms
/// post only to the directory; no framing, no `<base>`. What an agent wrote can therefore not run
/// even if it ever slipped past the escaping.
pub const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";
pub const HTML: &str = "text/html; charset=utf-8";
/// Pages revalidate: the ETag answers `304` while nothing changed.
const NO_CACHE: &str = "no-cache";

/// Bytes and their strong tag.
#[derive(Debug, Clone)]
pub struct Page {
    pub body: Bytes,
    /// Quoted, as it goes into the `ETag` header.
    pub etag: String,
}

impl Page {
    pub fn new(body: impl Into<Bytes>) -> Page {
        let body = body.into();
        let digest = Sha256::digest(&body);
        let etag = format!("\"p{}\"", digest[..12].iter().map(|b| format!("{b:02x}")).collect::<String>());
        Page { body, etag }
    }

    /// Whether an `If-None-Match` value names this page (`*`, or a list compared weakly).
    fn matches(&self, if_none_match: &str) -> bool {
        if_none_match
            .split(',')
            .map(str::trim)
            .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == self.etag)
    }

    /// `200` with the page, or `304` when the client holds it; with `vary` on top of
    /// `Accept-Language`.
    pub fn respond(&self, request: &HeaderMap, content_type: &'static str, vary: &'static str) -> Response {
        let unchanged = request
            .get_all(header::IF_NONE_MATCH)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| self.matches(v));
        let mut res = if unchanged {
            StatusCode::NOT_MODIFIED.into_response()
        } else {
            let mut res = Response::new(Body::from(self.body.clone()));
            res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
            res
        };
        let headers = res.headers_mut();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(NO_CACHE));
        headers.insert(header::VARY, HeaderValue::from_static(vary));
        if let Ok(etag) = HeaderValue::from_str(&self.etag) {
            headers.insert(header::ETAG, etag);
        }
        secure(headers);
        res
    }
}

/// The pages' own policy in place of the API's (which forbids forms and stylesheets).
pub fn secure(headers: &mut HeaderMap) {
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(
        HeaderName::from_static("cross-origin-opener-policy"),
        HeaderValue::from_static("same-origin"),
    );
}

/// Tells caches to ask again before each use of the answer.
pub fn not_kept(headers: &mut HeaderMap) {
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(NO_CACHE));
}

/// A page that is not kept (an error, a redirect target that moved): its status and no ETag.
pub fn uncached(status: StatusCode, html: String) -> Response {
    let mut res = (status, [(header::CONTENT_TYPE, HTML)], html).into_response();
    let headers = res.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(NO_CACHE));
    headers.insert(header::VARY, HeaderValue::from_static("Accept-Language"));
    secure(headers);
    res
}

/// Memory for rendered card and call pages: each is a few kilobytes, so this holds thousands.
pub const PAGE_CACHE_BYTES: usize = 16 << 20;

/// Which page: the document it shows, in which language, with the language switch carried in
/// its links or not.
type PageKey = (DocumentKey, Lang, bool);

struct Kept {
    /// The ETag of the document the page was rendered from: a newer document means a new page.
    source: String,
    page: Arc<Page>,
}

impl Kept {
    /// What it counts against the budget, under a key of `key_bytes`.
    fn weight(&self, key_bytes: usize) -> usize {
        self.page.body.len() + key_bytes + self.source.len()
    }
}

/// Card and call pages, least recently used out first past `PAGE_CACHE_BYTES`. A page is good
/// exactly while the document it shows is the one the core serves, so nothing here needs to
/// follow the change log: the core's cache does, and its ETag says which version this is.
pub struct PageCache {
    inner: Mutex<Shelf>,
    budget: usize,
}

struct Shelf {
    pages: LruCache<PageKey, Kept>,
    bytes: usize,
}

impl Default for PageCache {
    fn default() -> Self {
        PageCache::new(PAGE_CACHE_BYTES)
    }
}

impl PageCache {
    pub fn new(budget: usize) -> PageCache {
        PageCache { inner: Mutex::new(Shelf { pages: LruCache::unbounded(), bytes: 0 }), budget }
    }

    fn shelf(&self) -> std::sync::MutexGuard<'_, Shelf> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The page of this version of the document, when held.
    pub fn get(&self, key: &PageKey, source: &str) -> Option<Arc<Page>> {
        let mut shelf = self.shelf();
        match shelf.pages.get(key) {
            Some(kept) if kept.source == source => Some(kept.page.clone()),
            _ => None,
        }
    }

    pub fn keep(&self, key: PageKey, source: String, page: Arc<Page>) {
        let kept = Kept { source, page };
        let key_bytes = key.0.bytes();
        let weight = kept.weight(key_bytes);
        if weight > self.budget {
            return;
        }
        let mut shelf = self.shelf();
        // A page replaced under its key gives back all it weighed, its key's bytes too (else
        // each new version of a page would leave them counted, until the shelf held nothing).
        if let Some(old) = shelf.pages.put(key, kept) {
            shelf.bytes -= old.weight(key_bytes);
        }
        shelf.bytes += weight;
        while shelf.bytes > self.budget {
            match shelf.pages.pop_lru() {
                Some((key, old)) => shelf.bytes -= old.weight(key.0.bytes()),
                None => break,
            }
        }
    }
}

/// Counts of what the shelf holds, for tests.
#[cfg(test)]
impl PageCache {
    fn held(&self) -> (usize, usize) {
        let shelf = self.shelf();
        (shelf.pages.len(), shelf.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_served_for_its_version_only_and_the_budget_holds() {
        let cache = PageCache::new(100);
        let key = |h: &str| (DocumentKey::Card(h.into()), Lang::En, false);
        cache.keep(key("a"), "\"v1\"".into(), Arc::new(Page::new("x".repeat(40))));
        assert!(cache.get(&key("a"), "\"v1\"").is_some());
        assert!(cache.get(&key("a"), "\"v2\"").is_none());
        assert!(cache.get(&(DocumentKey::Card("a".into()), Lang::Zh, false), "\"v1\"").is_none());
        cache.keep(key("b"), "\"v1\"".into(), Arc::new(Page::new("y".repeat(40))));
        cache.keep(key("c"), "\"v1\"".into(), Arc::new(Page::new("z".repeat(40))));
        let (n, bytes) = cache.held();
        assert!(bytes <= 100 && n == 2, "{n} pages, {bytes} bytes");
        assert!(cache.get(&key("a"), "\"v1\"").is_none(), "the least recently used went first");
        // New versions of one page replace it and weigh what one version does.
        for version in 0..1_000 {
            cache.keep(key("b"), format!("\"v{version}\""), Arc::new(Page::new("y".repeat(40))));
        }
        let (n, bytes) = cache.held();
        assert!(cache.get(&key("b"), "\"v999\"").is_some(), "{n} pages, {bytes} bytes");
        assert!(cache.get(&key("c"), "\"v1\"").is_some(), "{n} pages, {bytes} bytes");
        assert_eq!(Page::new("same").etag, Page::new("same").etag);
        assert_ne!(Page::new("same").etag, Page::new("other").etag);
    }
}
