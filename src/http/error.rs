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

/// The answer to a request to `/mcp` that the server refused before the MCP endpoint read it
/// (a body too large or too slow, no slot, the request's time up): JSON-RPC's error with
/// `id: null` (no message was read) and the envelope as `data`, under the REST answer's status
/// and headers, as the MCP endpoint tells its own transport refusals. `-32600` for what the
/// client sent, `-32603` for the server's side.
pub fn json_rpc(e: Error) -> Response {
    let mut res = e.clone().into_response();
    let status = res.status();
    let facts = e.facts();
    let message = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": if status.is_server_error() { -32603 } else { -32600 },
            "message": facts.messages.en.clone(),
            "data": ErrorEnvelope::from_facts(facts),
        },
    });
    *res.body_mut() = axum::body::Body::from(message.to_string());
    res.headers_mut().remove(header::CONTENT_LENGTH);
    res
}

/// Fallback for paths no route knows.
pub async fn not_found() -> Error {
    Error::NotFound
}

/// Fallback for a known path with a method it does not take.
pub async fn method_not_allowed() -> Error {
    Error::MethodNotAllowed
}
