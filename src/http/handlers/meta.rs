//! The directory's own entry points: the endpoint index, stats, skill.md and openapi.json.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};

use super::Reply;
use crate::app::App;
use crate::domain::changes::ChangesQuery;
use crate::domain::moderation::{ModerationLog, ModerationQuery};
use crate::domain::statement::Jwks;
use crate::domain::stats::Stats;
use crate::error::Result;
use crate::http::extract::QueryParams;
use crate::http::published::published;
use crate::http::tagged;

const JSON: &str = "application/json";

pub async fn index() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, JSON)], published().api_index.clone())
}

pub async fn moderation(
    State(app): State<App>,
    QueryParams(q): QueryParams<ModerationQuery>,
) -> Reply<ModerationLog> {
    Ok(Json(app.moderation_log(q).await?))
}

pub async fn stats(State(app): State<App>) -> Reply<Stats> {
    Ok(Json(app.stats().await?))
}

pub async fn skill() -> impl IntoResponse {
    let skill_md = published().skill_md.clone();
    ([(header::CONTENT_TYPE, "text/markdown; charset=utf-8")], skill_md)
}

pub async fn openapi() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, JSON)], published().openapi.clone())
}

pub async fn jwks(State(app): State<App>) -> Reply<Jwks> {
    Ok(Json(app.jwks().await?))
}

pub async fn changes(
    State(app): State<App>,
    headers: HeaderMap,
    QueryParams(q): QueryParams<ChangesQuery>,
) -> Result<Response> {
    let page = app.changes(q).await?;
    Ok(tagged::respond(&headers, &page))
}
