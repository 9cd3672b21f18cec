//! `/api/agents…`: registration, search, cards and contact requests to an agent.

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;

use super::{Created, Reply, created};
use crate::domain::agent::{AgentList, AgentSearch, Registered, Registration};
use crate::domain::contact_request::{ContactRequestDetail, NewContactRequest};
use crate::domain::recovery::{Recovered, RecoveryExchange, RecoveryStarted};
use crate::error::Result;
use crate::http::extract::{Auth, ClientIp, JsonBody, PathParam, QueryParams};
use crate::http::tagged;
use crate::service::App;
use crate::service::cache::ViewKey;

pub async fn register(
    State(app): State<App>,
    ClientIp(ip): ClientIp,
    JsonBody(input): JsonBody<Registration>,
) -> Created<Registered> {
    Ok(created(app.register(input, ip).await?))
}

pub async fn search(
    State(app): State<App>,
    ClientIp(ip): ClientIp,
    QueryParams(q): QueryParams<AgentSearch>,
) -> Reply<AgentList> {
    Ok(Json(app.find_agents(q, &ip).await?))
}

pub async fn card(
    State(app): State<App>,
    headers: HeaderMap,
    PathParam(handle): PathParam,
) -> Result<Response> {
    let view = app.public_view(ViewKey::Card(handle.into())).await?;
    Ok(tagged::respond(&headers, &view.rendered))
}

pub async fn send_request(
    State(app): State<App>,
    Auth(caller): Auth,
    PathParam(handle): PathParam,
    JsonBody(input): JsonBody<NewContactRequest>,
) -> Created<ContactRequestDetail> {
    Ok(created(app.send_request(caller, handle, input).await?))
}

pub async fn recover(
    State(app): State<App>,
    ClientIp(ip): ClientIp,
    PathParam(handle): PathParam,
) -> Reply<RecoveryStarted> {
    Ok(Json(app.start_recovery(handle, ip).await?))
}

pub async fn recovered(
    State(app): State<App>,
    JsonBody(input): JsonBody<RecoveryExchange>,
) -> Reply<Recovered> {
    Ok(Json(app.complete_recovery(input).await?))
}
