//! The pages' handlers: each reads what it shows through the same operation the API calls,
//! renders it in the reader's language, and answers with the page's own ETag. A card or call
//! page is kept per version of its document (`PageCache`), so a hit costs what the JSON costs.

use std::sync::Arc;

use askama::Template;
use axum::Extension;
use axum::extract::{Path, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::lang::{Choice, LANG_PARAM};
use super::page::{HTML, Page, PageCache, uncached};
use super::views::{CallPage, CardPage, ErrorPage, Frame, HomePage, SearchPage};
use crate::app::App;
use crate::derived::documents::{Document, DocumentKey};
use crate::domain::agent::{AgentCard, AgentSearch};
use crate::domain::call::CallDetail;
use crate::error::Error;
use crate::net::request_client_ip;
use crate::validation;

/// `Vary` of every page; `/` also varies by `Accept` (a page or the API's index).
const VARY: &str = "Accept-Language";
const VARY_HOME: &str = "Accept, Accept-Language";

/// The query's pairs less blank fields (a form sends every field, filled or not).
fn pairs(parts: &Parts) -> Vec<(String, String)> {
    let query = parts.uri.query().unwrap_or("");
    url::form_urlencoded::parse(query.as_bytes()).into_owned().filter(|(_, v)| !v.trim().is_empty()).collect()
}

fn choice(parts: &Parts) -> Choice {
    Choice::of(parts.uri.query(), &parts.headers)
}

/// A template that failed to render: logged, and a 500 page without it.
fn rendered(template: &impl Template) -> Result<String, Error> {
    template.render().map_err(|e| {
        tracing::error!(error = %e, "a page did not render");
        Error::Internal
    })
}

/// The error as a page in the reader's language: its status, code and message from
/// `Error::facts`, as the API's envelope has them.
fn error_page(choice: Choice, path: &str, error: &Error) -> Response {
    let facts = error.facts();
    let f = Frame::new(choice, choice.lang.words().error_title.to_owned(), path, &[]);
    let page = ErrorPage {
        f,
        status: facts.status,
        code: facts.code,
        message: match choice.lang {
            super::Lang::En => facts.messages.en.clone(),
            super::Lang::Zh => facts.messages.zh.clone(),
        },
    };
    let status = StatusCode::from_u16(facts.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let html = page.render().unwrap_or_else(|_| facts.messages.en.clone());
    let mut res = uncached(status, html);
    if let Some(secs) = facts.retry_after {
        res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    res
}

/// A path no route knows, for a reader who asked for a page. Its language switch is the query
/// alone (`?lang=zh`): the path is whatever was asked, and one such as `//evil.example/x` would
/// make the directory's own link lead to another site.
pub async fn not_found(req: Request) -> Response {
    let (parts, _) = req.into_parts();
    error_page(choice(&parts), "", &Error::NotFound)
}

/// `/` for people: what the directory is, a search box, the counts of `/api/stats`, and the way
/// in for agents.
pub async fn home(State(app): State<App>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    let choice = choice(&parts);
    let stats = match app.stats().await {
        Ok(stats) => stats,
        Err(e) => return error_page(choice, "/", &e),
    };
    let base = app.settings().base_url.trim_end_matches('/').to_owned();
    let mcp_url = format!("{base}/mcp");
    let f = Frame::new(choice, choice.lang.words().what_title.to_owned(), "/", &[]);
    let page = HomePage {
        f,
        stats,
        mcp_config: serde_json::json!({"mcpServers": {"agentdir": {"type": "http", "url": mcp_url}}})
            .to_string(),
        mcp_url,
    };
    match rendered(&page) {
        Ok(html) => Page::new(html).respond(&parts.headers, HTML, VARY_HOME),
        Err(e) => error_page(choice, "/", &e),
    }
}

/// `/agents?q=…`: the API's search (`find_agents`) with the same query, counted against the same
/// client address.
pub async fn search(State(app): State<App>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    let choice = choice(&parts);
    let pairs = pairs(&parts);
    let query: Vec<(String, String)> = pairs.iter().filter(|(k, _)| k != LANG_PARAM).cloned().collect();
    let q: AgentSearch = match validation::from_query(query.clone()) {
        Ok(q) => q,
        Err(e) => return error_page(choice, "/agents", &e),
    };
    let client = request_client_ip(&parts, &app);
    let list = match app.find_agents(q.clone(), client).await {
        Ok(list) => list,
        Err(e) => return error_page(choice, "/agents", &e),
    };
    let words = choice.lang.words();
    let title = match q.q.as_deref() {
        Some(text) => format!("{} {text}", words.results),
        None => words.results_all.to_owned(),
    };
    let f = Frame::new(choice, title, "/agents", &pairs);
    let page = SearchPage::new(f, choice, &q, &list, &pairs);
    match rendered(&page) {
        Ok(html) => Page::new(html).respond(&parts.headers, HTML, VARY),
        Err(e) => error_page(choice, "/agents", &e),
    }
}

/// What a document page needs: the document read as the core's type, rendered into a page.
type Render = fn(Choice, &Document, &str, &str) -> Result<String, Error>;

fn render_card(choice: Choice, document: &Document, path: &str, base: &str) -> Result<String, Error> {
    let card: AgentCard = read_back(document)?;
    let title = format!("{} (@{})", card.agent.name, card.agent.handle);
    let f = Frame::new(choice, title, path, &[]);
    rendered(&CardPage::new(f, card, choice, base))
}

fn render_call(choice: Choice, document: &Document, path: &str, base: &str) -> Result<String, Error> {
    let detail: CallDetail = read_back(document)?;
    let f = Frame::new(choice, detail.post.title.clone(), path, &[]);
    rendered(&CallPage::new(f, detail, choice, base))
}

/// The document's JSON as the core's own type (what MCP's text reads too).
fn read_back<T: serde::de::DeserializeOwned>(document: &Document) -> Result<T, Error> {
    serde_json::from_slice(&document.rendered.json).map_err(|e| {
        tracing::error!(error = %e, "a document did not read back");
        Error::Internal
    })
}

/// The page of a document: from the page cache when it holds this version of it, else rendered
/// and kept.
async fn document_page(
    app: &App,
    cache: &PageCache,
    parts: &Parts,
    key: DocumentKey,
    render: Render,
) -> Result<Response, Error> {
    let choice = choice(parts);
    let document = app.public_document(key.clone()).await?;
    let page_key = (key, choice.lang, choice.chosen);
    let page = match cache.get(&page_key, &document.rendered.etag) {
        Some(page) => page,
        None => {
            let html = render(choice, &document, parts.uri.path(), &app.settings().base_url)?;
            let page = Arc::new(Page::new(html));
            cache.keep(page_key, document.rendered.etag.clone(), page.clone());
            page
        }
    };
    Ok(page.respond(&parts.headers, HTML, VARY))
}

/// `/agents/{handle}`: the card. A renamed agent's previous handle answers 301 to the new one;
/// a deleted, suspended or unknown one 404.
pub async fn card(
    State(app): State<App>,
    Extension(cache): Extension<Arc<PageCache>>,
    handle: Result<Path<String>, axum::extract::rejection::PathRejection>,
    req: Request,
) -> Response {
    let (parts, _) = req.into_parts();
    let choice = choice(&parts);
    let path = parts.uri.path().to_owned();
    let Ok(Path(handle)) = handle else { return error_page(choice, &path, &Error::NotFound) };
    let key = DocumentKey::Card(handle.as_str().into());
    match document_page(&app, &cache, &parts, key, render_card).await {
        Ok(res) => res,
        Err(Error::NotFound) => match app.moved_to(handle).await {
            Ok(Some(new)) => {
                let location = choice.link(&format!("/agents/{new}"));
                // Asked again each time, as the API's 301 is: the handle may lead elsewhere later.
                let mut res = (StatusCode::MOVED_PERMANENTLY, [(header::LOCATION, location)]).into_response();
                super::page::secure(res.headers_mut());
                super::page::not_kept(res.headers_mut());
                res
            }
            Ok(None) => error_page(choice, &path, &Error::NotFound),
            Err(e) => error_page(choice, &path, &e),
        },
        Err(e) => error_page(choice, &path, &e),
    }
}

/// `/calls/{id}`: a call with its replies; a hidden or deleted one 404.
pub async fn call(
    State(app): State<App>,
    Extension(cache): Extension<Arc<PageCache>>,
    id: Result<Path<String>, axum::extract::rejection::PathRejection>,
    req: Request,
) -> Response {
    let (parts, _) = req.into_parts();
    let choice = choice(&parts);
    let path = parts.uri.path().to_owned();
    let Ok(Path(id)) = id else { return error_page(choice, &path, &Error::NotFound) };
    match document_page(&app, &cache, &parts, DocumentKey::Call(id.into()), render_call).await {
        Ok(res) => res,
        Err(e) => error_page(choice, &path, &e),
    }
}

/// The pages' icon (linked from every page, so browsers do not ask for `/favicon.ico`).
pub async fn icon(headers: HeaderMap) -> Response {
    static ICON: std::sync::LazyLock<Page> =
        std::sync::LazyLock::new(|| Page::new(include_str!("favicon.svg")));
    ICON.respond(&headers, "image/svg+xml", VARY)
}

/// The pages' one stylesheet.
pub async fn stylesheet(headers: HeaderMap) -> Response {
    static CSS: std::sync::LazyLock<Page> = std::sync::LazyLock::new(|| Page::new(include_str!("pages.css")));
    CSS.respond(&headers, "text/css; charset=utf-8", VARY)
}
