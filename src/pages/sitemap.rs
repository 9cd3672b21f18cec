//! What crawlers read: `/robots.txt` (the sitemap's address; search result pages, which spend
//! the search budget, are off limits) and `/sitemap.xml`, the public cards — one sitemap while
//! they fit in one (`Settings::sitemap_urls`, at most the protocol's 50,000), else an index of
//! sitemaps at `/sitemaps/{n}.xml`.

use std::fmt::Write;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;

use super::page::Page;
use crate::app::App;
use crate::domain::agent::ListedCards;
use crate::error::Error;

const XML: &str = "application/xml; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";
/// What a sitemap varies by: nothing the reader sends.
const VARY: &str = "Accept-Encoding";

/// Paths no crawler should fetch: search results (the API's and the pages') spend the search
/// budget of everyone behind the crawler's address, and `/mcp` is for assistants.
pub const DISALLOWED: [&str; 5] = ["/agents?", "/agents$", "/api/agents?", "/api/posts?", "/mcp"];

pub async fn robots(State(app): State<App>, headers: HeaderMap) -> Response {
    let base = app.settings().base_url.trim_end_matches('/');
    let mut text = String::from("User-agent: *\n");
    for path in DISALLOWED {
        let _ = writeln!(text, "Disallow: {path}");
    }
    let _ = writeln!(text, "Allow: /\n\nSitemap: {base}/sitemap.xml");
    Page::new(text).respond(&headers, TEXT, VARY)
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

fn urlset(base: &str, listed: &ListedCards) -> String {
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
    );
    for card in &listed.cards {
        let _ = writeln!(
            xml,
            "<url><loc>{}</loc><lastmod>{}</lastmod></url>",
            escape(&format!("{base}/agents/{}", card.handle)),
            card.updated_at.rfc3339()
        );
    }
    xml.push_str("</urlset>\n");
    xml
}

/// `/sitemap.xml`: the cards, or past one sitemap's worth, the index of the sitemaps.
pub async fn root(State(app): State<App>, headers: HeaderMap) -> Result<Response, Error> {
    let per = app.settings().sitemap_urls;
    let base = app.settings().base_url.trim_end_matches('/').to_owned();
    let listed = app.listed_cards(0, per).await?;
    let xml = if listed.total <= u64::from(per) {
        urlset(&base, &listed)
    } else {
        let parts = listed.total.div_ceil(u64::from(per));
        let mut xml = String::from(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
        );
        for n in 1..=parts {
            let _ = writeln!(
                xml,
                "<sitemap><loc>{}</loc></sitemap>",
                escape(&format!("{base}/sitemaps/{n}.xml"))
            );
        }
        xml.push_str("</sitemapindex>\n");
        xml
    };
    Ok(Page::new(xml).respond(&headers, XML, VARY))
}

/// `/sitemaps/{n}.xml`: the n-th stretch of cards (from 1); one past the last is 404.
pub async fn part(
    State(app): State<App>,
    headers: HeaderMap,
    file: Result<Path<String>, axum::extract::rejection::PathRejection>,
) -> Result<Response, Error> {
    let Ok(Path(file)) = file else { return Err(Error::NotFound) };
    // Only the names the index lists: digits, no sign, no leading zero.
    let n: u64 = file
        .strip_suffix(".xml")
        .filter(|n| !n.starts_with('0') && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|n| n.parse().ok())
        .ok_or(Error::NotFound)?;
    let per = app.settings().sitemap_urls;
    let offset = (n - 1).checked_mul(u64::from(per)).ok_or(Error::NotFound)?;
    let listed = app.listed_cards(offset, per).await?;
    if listed.cards.is_empty() {
        return Err(Error::NotFound);
    }
    let base = app.settings().base_url.trim_end_matches('/').to_owned();
    Ok(Page::new(urlset(&base, &listed)).respond(&headers, XML, VARY))
}
