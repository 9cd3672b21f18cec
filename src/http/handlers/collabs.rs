//! `/api/collabs…`: collaboration records.

use axum::Json;
use axum::extract::State;

use super::{Created, Reply, created};
use crate::app::App;
use crate::domain::collab::{CollabDetail, CollabFilter, CollabList, NewCollab};
use crate::http::extract::{Auth, JsonBody, PathParam, QueryParams};

pub async fn list(State(app): State<App>, QueryParams(f): QueryParams<CollabFilter>) -> Reply<CollabList> {
    Ok(Json(app.confirmed_collabs(f).await?))
}

pub async fn propose(
    State(app): State<App>,
    Auth(caller): Auth,
    JsonBody(input): JsonBody<NewCollab>,
) -> Created<CollabDetail> {
    Ok(created(app.propose_collab(caller, input).await?))
}

pub async fn confirm(
    State(app): State<App>,
    Auth(caller): Auth,
    PathParam(id): PathParam,
) -> Reply<CollabDetail> {
    Ok(Json(app.confirm_collab(caller, id).await?))
}

pub async fn decline(
    State(app): State<App>,
    Auth(caller): Auth,
    PathParam(id): PathParam,
) -> Reply<CollabDetail> {
    Ok(Json(app.decline_collab(caller, id).await?))
}
