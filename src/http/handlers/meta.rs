//! The directory's own entry points: the endpoint index, stats, skill.md and openapi.json.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};

use super::Reply;
use crate::domain::changes::ChangesQuery;
use crate::domain::stats::Stats;
use crate::error::Result;
use crate::http::docs::{self, ApiIndex};
use crate::http::extract::QueryParams;
use crate::http::tagged;
use crate::service::App;
use crate::service::rendered::Rendered;

pub async fn index(State(app): State<App>) -> Json<ApiIndex> {
    Json(docs::api_index(&app.settings.base_url))
}

pub async fn stats(State(app): State<App>) -> Reply<Stats> {
    Ok(Json(app.run(|d| d.stats()).await?))
}

pub async fn skill(State(app): State<App>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/markdown; charset=utf-8")], docs::skill_md(&app.settings.base_url))
}

pub async fn openapi(State(app): State<App>) -> impl IntoResponse {
    Json(docs::openapi(&app.settings.base_url))
}

pub async fn changes(
    State(app): State<App>,
    headers: HeaderMap,
    QueryParams(q): QueryParams<ChangesQuery>,
) -> Result<Response> {
    let page = app.run(move |d| Rendered::of(&d.changes(q)?)).await?;
    Ok(tagged::respond(&headers, &page))
}
