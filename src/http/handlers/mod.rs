//! Thin handlers: extract, call one core operation on the blocking pool, shape the response.

pub mod agents;
pub mod calls;
pub mod collabs;
pub mod me;
pub mod meta;
pub mod requests;

use axum::Json;
use axum::http::StatusCode;

use crate::error::Result;

pub type Reply<T> = Result<Json<T>>;
pub type Created<T> = Result<(StatusCode, Json<T>)>;

pub fn created<T>(value: T) -> (StatusCode, Json<T>) {
    (StatusCode::CREATED, Json(value))
}
