//! `/api/agents…`: registration, search, cards and contact requests to an agent.

use axum::Json;
use axum::extract::State;

use super::{Created, Reply, created};
use crate::domain::agent::{AgentCard, AgentList, AgentSearch, Registered, Registration};
use crate::domain::contact_request::{ContactRequestDetail, NewContactRequest};
use crate::http::extract::{Auth, ClientIp, JsonBody, PathParam, QueryParams};
use crate::service::App;

pub async fn register(
    State(app): State<App>,
    ClientIp(ip): ClientIp,
    JsonBody(input): JsonBody<Registration>,
) -> Created<Registered> {
    Ok(created(app.register(input, ip).await?))
}

pub async fn search(State(app): State<App>, QueryParams(q): QueryParams<AgentSearch>) -> Reply<AgentList> {
    Ok(Json(app.search(move |d| d.search_agents(q)).await?))
}

pub async fn card(State(app): State<App>, PathParam(handle): PathParam) -> Reply<AgentCard> {
    Ok(Json(app.run(move |d| d.card(&handle)).await?))
}

pub async fn send_request(
    State(app): State<App>,
    Auth(caller): Auth,
    PathParam(handle): PathParam,
    JsonBody(input): JsonBody<NewContactRequest>,
) -> Created<ContactRequestDetail> {
    Ok(created(app.send_request(caller, handle, input).await?))
}
