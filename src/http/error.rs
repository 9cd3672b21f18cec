//! The error envelope: how every failure looks on the wire, axum's own rejections included. It
//! only copies the facts `Error::facts` declares.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::Serialize;

use crate::error::{Error, Facts};

#[derive(Debug, Serialize, JsonSchema)]
pub struct ErrorBody {
    pub code: String,
    pub message_en: String,
    pub message_zh: String,
    /// The input field the error is about, as a dotted path, or null.
    pub field: Option<String>,
}

/// `{"error": {...}}`, the body of every error response.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ErrorEnvelope {
    pub error: ErrorBody,
}

impl ErrorEnvelope {
    pub fn of(e: &Error) -> Self {
        Self::from_facts(e.facts())
    }

    fn from_facts(f: Facts<'_>) -> Self {
        ErrorEnvelope {
            error: ErrorBody {
                code: f.code.to_owned(),
                message_en: f.messages.en,
                message_zh: f.messages.zh,
                field: f.field.map(str::to_owned),
            },
        }
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let facts = self.facts();
        let status = StatusCode::from_u16(facts.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let retry_after = facts.retry_after;
        let mut res = (status, Json(ErrorEnvelope::from_facts(facts))).into_response();
        if let Some(secs) = retry_after {
            res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        res
    }
}

/// Fallback for paths no route knows.
pub async fn not_found() -> Error {
    Error::NotFound
}

/// Fallback for a known path with a method it does not take.
pub async fn method_not_allowed() -> Error {
    Error::MethodNotAllowed
}
