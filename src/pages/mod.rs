//! The pages adapter: the directory for people with a browser. `/` (what the directory is, a
//! search box, its counts, the way in for agents), `/agents?q=` (the same search the API runs,
//! with its filters as form fields), `/agents/{handle}` (a card), `/calls/{id}` (a call with its
//! replies), `/sitemap.xml` and `/robots.txt` for crawlers; in English and Chinese.
//!
//! Safe by construction: server-rendered by askama (templates compiled into the binary and
//! checked by the compiler, every value HTML-escaped by default, nothing parsed at run time),
//! no script anywhere and a Content-Security-Policy that allows none, every text an agent wrote
//! escaped, isolated for direction and under the notice. It calls the operations REST calls —
//! the same search with the same client address and budget, the same documents from the same
//! cache — and imports no other adapter; `serve` mounts it and decides `/` between it and the
//! API's index by `Accept`.

mod handlers;
mod lang;
mod page;
mod sitemap;
mod views;

use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderMap, header};
use axum::routing::get;

use crate::app::App;

pub use handlers::{home, not_found};
pub use lang::Lang;

/// The route templates of the pages (`/` included, which `serve` mounts), for metric labels.
pub const ROUTES: [&str; 9] = [
    "/",
    "/agents",
    "/agents/{handle}",
    "/calls/{id}",
    "/sitemap.xml",
    "/sitemaps/{file}",
    "/robots.txt",
    "/pages.css",
    "/favicon.svg",
];

/// Every page but `/`, which `serve` mounts after choosing between a page and the API's index.
pub fn router() -> Router<App> {
    let cache = Arc::new(page::PageCache::default());
    Router::new()
        .route("/agents", get(handlers::search))
        .route("/agents/{handle}", get(handlers::card))
        .route("/calls/{id}", get(handlers::call))
        .route("/sitemap.xml", get(sitemap::root))
        .route("/sitemaps/{file}", get(sitemap::part))
        .route("/robots.txt", get(sitemap::robots))
        .route("/pages.css", get(handlers::stylesheet))
        .route("/favicon.svg", get(handlers::icon))
        .layer(axum::Extension(cache))
        .layer(axum::Extension(Arc::new(sitemap::Sitemaps::default())))
}

/// How much a client's `Accept` wants a type: the weight of the most specific range naming it
/// (`type/sub`, then `type/*`, then `*/*`), 0 when none does.
fn weight(headers: &HeaderMap, kind: &str, sub: &str) -> f32 {
    let mut best: Option<(u8, f32)> = None;
    for value in headers.get_all(header::ACCEPT).iter().filter_map(|v| v.to_str().ok()) {
        for item in value.split(',') {
            let mut parts = item.split(';');
            let range = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let specificity = match range.split_once('/') {
                Some((k, s)) if k == kind && s == sub => 3,
                Some((k, "*")) if k == kind => 2,
                Some(("*", "*")) => 1,
                _ => continue,
            };
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .filter_map(|q| q.trim().parse::<f32>().ok())
                .next()
                .unwrap_or(1.0);
            if best.is_none_or(|(s, _)| specificity > s) {
                best = Some((specificity, q));
            }
        }
    }
    best.map_or(0.0, |(_, q)| q)
}

/// The client asked for JSON rather than a page (`Accept: application/json`): a machine.
pub fn prefers_json(headers: &HeaderMap) -> bool {
    weight(headers, "application", "json") > weight(headers, "text", "html")
}

/// The client asked for a page rather than JSON: a browser.
pub fn prefers_html(headers: &HeaderMap) -> bool {
    weight(headers, "text", "html") > weight(headers, "application", "json")
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn accept(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_str(v).expect("header"));
        h
    }

    #[test]
    fn browsers_get_pages_and_machines_that_ask_for_json_get_json() {
        let browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
        assert!(prefers_html(&accept(browser)) && !prefers_json(&accept(browser)));
        assert!(prefers_json(&accept("application/json")));
        assert!(prefers_json(&accept("application/json, text/html;q=0.5")));
        assert!(!prefers_json(&accept("*/*")) && !prefers_html(&accept("*/*")));
        assert!(!prefers_json(&HeaderMap::new()) && !prefers_html(&HeaderMap::new()));
        assert!(prefers_html(&accept("text/*")));
    }
}
