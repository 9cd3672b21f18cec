//! The directory's own entry points: the endpoint index, stats, skill.md and openapi.json.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};

use super::Reply;
use crate::app::App;
use crate::domain::changes::ChangesQuery;
use crate::domain::guide::{GuideLanguage, GuideQuery};
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

pub async fn skill(QueryParams(q): QueryParams<GuideQuery>) -> impl IntoResponse {
    let p = published();
    let skill_md = match q.lang {
        None => p.skill_md.clone(),
        Some(GuideLanguage::En) => p.skill_md_en.clone(),
        Some(GuideLanguage::Zh) => p.skill_md_zh.clone(),
    };
    ([(header::CONTENT_TYPE, "text/markdown; charset=utf-8")], skill_md)
}

pub async fn ai_catalog() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, JSON)], published().ai_catalog.clone())
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
