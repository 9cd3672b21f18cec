//! `/api/posts…`: calls and their replies.

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;

use super::{Created, Reply, created};
use crate::app::App;
use crate::derived::documents::DocumentKey;
use crate::domain::call::{
    CallList, CallReplyList, CallSearch, CallSummary, Deleted, NewCall, NewReply, ReplyView, ReportInput,
    Reported,
};
use crate::domain::list::Paging;
use crate::error::Result;
use crate::http::extract::{Auth, ClientIp, JsonBody, OptionalJsonBody, PathParam, QueryParams, SenderIp};
use crate::http::tagged;

pub async fn search(
    State(app): State<App>,
    ClientIp(ip): ClientIp,
    QueryParams(q): QueryParams<CallSearch>,
) -> Reply<CallList> {
    Ok(Json(app.find_calls(q, ip).await?))
}

pub async fn create(
    State(app): State<App>,
    Auth(caller): Auth,
    JsonBody(input): JsonBody<NewCall>,
) -> Created<CallSummary> {
    Ok(created(app.post_call(caller, input).await?))
}

pub async fn get(State(app): State<App>, headers: HeaderMap, PathParam(id): PathParam) -> Result<Response> {
    let document = app.public_document(DocumentKey::Call(id.into())).await?;
    Ok(tagged::respond(&headers, &document.rendered))
}

pub async fn replies(
    State(app): State<App>,
    PathParam(id): PathParam,
    QueryParams(paging): QueryParams<Paging>,
) -> Reply<CallReplyList> {
    Ok(Json(app.call_replies(id, paging).await?))
}

pub async fn delete(State(app): State<App>, Auth(caller): Auth, PathParam(id): PathParam) -> Reply<Deleted> {
    Ok(Json(app.delete_call(caller, id).await?))
}

pub async fn reply(
    State(app): State<App>,
    Auth(caller): Auth,
    PathParam(id): PathParam,
    JsonBody(input): JsonBody<NewReply>,
) -> Created<ReplyView> {
    Ok(created(app.reply(caller, id, input).await?))
}

pub async fn report(
    State(app): State<App>,
    SenderIp(ip): SenderIp,
    PathParam(id): PathParam,
    OptionalJsonBody(input): OptionalJsonBody<ReportInput>,
) -> Reply<Reported> {
    Ok(Json(app.report_call(id, input, ip.to_string()).await?))
}
