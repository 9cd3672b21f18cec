//! What crawlers read: `/robots.txt` (the sitemap's address; search result pages, which spend
//! the search budget, are off limits) and `/sitemap.xml`, the public cards — one sitemap while
//! they fit in one (`Settings::sitemap_urls`, at most the protocol's 50,000), else an index of
//! sitemaps at `/sitemaps/{n}.xml`.
//!
//! Sitemaps are served as built for [`SITEMAP_KEPT_MS`] (`Sitemaps`): what a request may cost
//! does not grow with the directory. Before, each request counted every public card and read its
//! stretch past all those before it: ~0.3–0.5 s of a core at a million agents, asked by anyone
//! as often as they liked, one past the last sitemap included.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Arc;

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;

use super::page::Page;
use crate::app::App;
use crate::domain::agent::{ListedCard, ListedStretches, SITEMAP_KEPT_MS};
use crate::error::Error;

const XML: &str = "application/xml; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";
/// What a sitemap varies by: nothing the reader sends.
const VARY: &str = "Accept-Encoding";
/// What the built sitemaps kept may weigh: at the default 50,000 cards a sitemap (~5.8 MB), the
/// first two asked for; another is built for each request that asks for it (a few tens of
/// milliseconds at any size of directory, read from where it starts).
const KEPT_BYTES: usize = 16 << 20;

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

/// The sitemaps as built: the public cards counted and cut into stretches once for
/// [`SITEMAP_KEPT_MS`], `/sitemap.xml` and the stretches asked for kept that long (within
/// [`KEPT_BYTES`]). One request builds at a time; the others wait for it and serve what it built.
#[derive(Default)]
pub struct Sitemaps {
    shelf: tokio::sync::Mutex<Shelf>,
}

#[derive(Default)]
struct Shelf {
    plan: Option<Plan>,
    /// Stretches built since the plan, by number (from 1).
    parts: HashMap<u64, Arc<Page>>,
    bytes: usize,
}

struct Plan {
    made_ms: i64,
    stretches: ListedStretches,
    root: Arc<Page>,
}

impl Plan {
    fn fresh(&self, now_ms: i64) -> bool {
        (self.made_ms..self.made_ms + SITEMAP_KEPT_MS).contains(&now_ms)
    }

    /// Stretch `n`'s bounds, when the plan has one of that number.
    fn bounds(&self, n: u64) -> Option<(i64, i64)> {
        let starts = &self.stretches.starts;
        let i = usize::try_from(n.checked_sub(1)?).ok()?;
        Some((*starts.get(i)?, starts.get(i + 1).copied().unwrap_or(i64::MAX)))
    }
}

impl Sitemaps {
    /// The plan in force, made again once it is older than [`SITEMAP_KEPT_MS`] (dropping the
    /// stretches built under the old one).
    async fn plan<'a>(&self, shelf: &'a mut Shelf, app: &App) -> Result<&'a Plan, Error> {
        let now = crate::time::now_ms();
        if !shelf.plan.as_ref().is_some_and(|plan| plan.fresh(now)) {
            shelf.parts.clear();
            shelf.bytes = 0;
            shelf.plan = None;
            let per = app.settings().sitemap_urls;
            let stretches = app.listed_stretches(per).await?;
            let base = base(app);
            let root = if stretches.starts.len() <= 1 {
                let cards = match stretches.starts.first() {
                    Some(&from) => app.listed_cards(from, i64::MAX, per).await?,
                    None => Vec::new(),
                };
                // The one sitemap is also the first stretch, as built.
                let root = Arc::new(Page::new(urlset(&base, &cards)));
                shelf.bytes = root.body.len();
                shelf.parts.insert(1, root.clone());
                root
            } else {
                Arc::new(Page::new(index(&base, stretches.starts.len())))
            };
            shelf.plan = Some(Plan { made_ms: now, stretches, root });
        }
        shelf.plan.as_ref().ok_or(Error::Internal)
    }

    async fn root(&self, app: &App) -> Result<Arc<Page>, Error> {
        let mut shelf = self.shelf.lock().await;
        Ok(self.plan(&mut shelf, app).await?.root.clone())
    }

    /// Stretch `n` (from 1); a number the plan does not have is 404.
    async fn part(&self, app: &App, n: u64) -> Result<Arc<Page>, Error> {
        let mut shelf = self.shelf.lock().await;
        let (from, until) = self.plan(&mut shelf, app).await?.bounds(n).ok_or(Error::NotFound)?;
        if let Some(page) = shelf.parts.get(&n) {
            return Ok(page.clone());
        }
        let cards = app.listed_cards(from, until, app.settings().sitemap_urls).await?;
        let page = Arc::new(Page::new(urlset(&base(app), &cards)));
        if shelf.bytes + page.body.len() <= KEPT_BYTES {
            shelf.bytes += page.body.len();
            shelf.parts.insert(n, page.clone());
        }
        Ok(page)
    }
}

fn base(app: &App) -> String {
    app.settings().base_url.trim_end_matches('/').to_owned()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

fn urlset(base: &str, cards: &[ListedCard]) -> String {
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
    );
    for card in cards {
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

fn index(base: &str, parts: usize) -> String {
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
    );
    for n in 1..=parts {
        let _ =
            writeln!(xml, "<sitemap><loc>{}</loc></sitemap>", escape(&format!("{base}/sitemaps/{n}.xml")));
    }
    xml.push_str("</sitemapindex>\n");
    xml
}

/// `/sitemap.xml`: the cards, or past one sitemap's worth, the index of the sitemaps.
pub async fn root(
    State(app): State<App>,
    Extension(sitemaps): Extension<Arc<Sitemaps>>,
    headers: HeaderMap,
) -> Result<Response, Error> {
    Ok(sitemaps.root(&app).await?.respond(&headers, XML, VARY))
}

/// `/sitemaps/{n}.xml`: the n-th stretch of cards (from 1); one past the last is 404.
pub async fn part(
    State(app): State<App>,
    Extension(sitemaps): Extension<Arc<Sitemaps>>,
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
    Ok(sitemaps.part(&app, n).await?.respond(&headers, XML, VARY))
}
