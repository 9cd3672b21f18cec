//! `/api/agents…`: registration, search, cards and contact requests to an agent.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::{Created, Reply, created};
use crate::app::App;
use crate::derived::documents::DocumentKey;
use crate::domain::agent::{AgentList, AgentSearch, Registered, Registration};
use crate::domain::contact_request::{ContactRequestDetail, NewContactRequest};
use crate::domain::recovery::{Recovered, RecoveryExchange, RecoveryStarted};
use crate::error::{Error, Result};
use crate::http::extract::{Auth, ClientIp, JsonBody, PathParam, QueryParams, SenderIp};
use crate::http::tagged;

pub async fn register(
    State(app): State<App>,
    ClientIp(ip): ClientIp,
    JsonBody(input): JsonBody<Registration>,
) -> Created<Registered> {
    Ok(created(app.register(input, ip.to_string()).await?))
}

pub async fn search(
    State(app): State<App>,
    ClientIp(ip): ClientIp,
    QueryParams(q): QueryParams<AgentSearch>,
) -> Reply<AgentList> {
    Ok(Json(app.find_agents(q, ip).await?))
}

pub async fn card(
    State(app): State<App>,
    headers: HeaderMap,
    PathParam(handle): PathParam,
) -> Result<Response> {
    match app.public_document(DocumentKey::Card(handle.as_str().into())).await {
        Ok(document) => Ok(tagged::respond(&headers, &document.rendered)),
        Err(Error::NotFound) => moved(&app, handle, "").await,
        Err(e) => Err(e),
    }
}

/// A renamed agent's previous handle leads, while it is held, to the same path (`/api/agents/
/// {handle}` and then `tail`) under the new handle: 301. Any other handle: 404. The 301 is to be
/// asked again each time (`no-cache`): a handle held today may be another agent's later, or its
/// own again.
async fn moved(app: &App, handle: String, tail: &str) -> Result<Response> {
    match app.moved_to(handle).await? {
        Some(new) => Ok((
            StatusCode::MOVED_PERMANENTLY,
            [
                (header::LOCATION, format!("/api/agents/{new}{tail}")),
                (header::CACHE_CONTROL, "no-cache".to_owned()),
            ],
        )
            .into_response()),
        None => Err(Error::NotFound),
    }
}

pub async fn statement(State(app): State<App>, PathParam(handle): PathParam) -> Result<Response> {
    match app.statement(handle.clone()).await {
        Ok(statement) => Ok(Json(statement).into_response()),
        Err(Error::NotFound) => moved(&app, handle, "/statement").await,
        Err(e) => Err(e),
    }
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
    SenderIp(ip): SenderIp,
    PathParam(handle): PathParam,
) -> Reply<RecoveryStarted> {
    Ok(Json(app.start_recovery(handle, ip.to_string()).await?))
}

pub async fn recovered(
    State(app): State<App>,
    JsonBody(input): JsonBody<RecoveryExchange>,
) -> Reply<Recovered> {
    Ok(Json(app.complete_recovery(input).await?))
}
