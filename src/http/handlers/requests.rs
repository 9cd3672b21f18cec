//! `/api/requests/{id}…`: reading a contact request and the moves on it.

use axum::Json;
use axum::extract::State;

use super::Reply;
use crate::app::App;
use crate::domain::call::{ReportInput, Reported};
use crate::domain::contact_request::{ContactRequestDetail, DeclineInput};
use crate::http::extract::{Auth, ClientIp, OptionalJsonBody, PathParam};

pub async fn get(
    State(app): State<App>,
    Auth(caller): Auth,
    PathParam(id): PathParam,
) -> Reply<ContactRequestDetail> {
    Ok(Json(app.get_request(caller, id).await?))
}

pub async fn accept(
    State(app): State<App>,
    Auth(caller): Auth,
    PathParam(id): PathParam,
) -> Reply<ContactRequestDetail> {
    Ok(Json(app.accept_request(caller, id).await?))
}

pub async fn decline(
    State(app): State<App>,
    Auth(caller): Auth,
    PathParam(id): PathParam,
    OptionalJsonBody(input): OptionalJsonBody<DeclineInput>,
) -> Reply<ContactRequestDetail> {
    Ok(Json(app.decline_request(caller, id, input).await?))
}

pub async fn withdraw(
    State(app): State<App>,
    Auth(caller): Auth,
    PathParam(id): PathParam,
) -> Reply<ContactRequestDetail> {
    Ok(Json(app.withdraw_request(caller, id).await?))
}

pub async fn report(
    State(app): State<App>,
    ClientIp(ip): ClientIp,
    Auth(caller): Auth,
    PathParam(id): PathParam,
    OptionalJsonBody(input): OptionalJsonBody<ReportInput>,
) -> Reply<Reported> {
    Ok(Json(app.report_request(caller, id, input, ip.to_string()).await?))
}
