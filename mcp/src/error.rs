//! The bilingual error a port hands back, and its wire envelope.
//!
//! The core writes every message (English and Chinese in the same place, so they cannot drift);
//! this crate only carries them to the client. The one message written here is the internal
//! failure, which no port can produce because it happens after the port has answered.

use serde::Serialize;
use serde_json::Value;

/// What kind of failure a read met. It decides how a failed resource read is told to the
/// client (which JSON-RPC error code); the envelope's `code` stays the specific one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Nothing readable is there (unknown handle or id, hidden or deleted).
    NotFound,
    /// The arguments are not acceptable; the caller must change them.
    Invalid,
    /// The server is overloaded or timed out; the same read may succeed in a moment.
    Busy,
    /// The server failed; the cause is in its log.
    Internal,
}

/// A failed read, shaped like the REST error body: `{"error": {code, message_en, message_zh, field}}`.
///
/// Tools return it as a result with `isError: true`; resource reads return it as the `data` of a
/// JSON-RPC error, because `resources/read` has no error result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolError {
    #[serde(skip)]
    pub kind: ErrorKind,
    /// Specific snake_case code, the same one REST would use (`not_found`, `validation_failed`…).
    pub code: String,
    pub message_en: String,
    pub message_zh: String,
    /// Path of the offending argument (`limit`, `handle`), or `None` when no single field is at fault.
    pub field: Option<String>,
}

impl ToolError {
    pub fn new(
        kind: ErrorKind,
        code: impl Into<String>,
        message_en: impl Into<String>,
        message_zh: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            code: code.into(),
            message_en: message_en.into(),
            message_zh: message_zh.into(),
            field: None,
        }
    }

    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// A port answered but its output could not be turned into JSON: a bug, not the caller's fault.
    pub(crate) fn internal() -> Self {
        Self::new(
            ErrorKind::Internal,
            "internal",
            "The server could not complete this read. Please try again later.",
            "服务器未能完成此次读取，请稍后重试。",
        )
    }

    /// `arguments` of a tool call that is not a JSON object; the core never sees such a call.
    pub(crate) fn arguments_not_an_object() -> Self {
        Self::new(
            ErrorKind::Invalid,
            "validation_failed",
            "Tool arguments must be a JSON object.",
            "工具参数必须是 JSON 对象。",
        )
    }

    /// A request body that is not JSON (REST answers the same `invalid_json`).
    pub(crate) fn not_json() -> Self {
        Self::new(
            ErrorKind::Invalid,
            "invalid_json",
            "The request body is not valid JSON.",
            "请求体不是有效的 JSON。",
        )
    }

    /// A JSON body that is not a JSON-RPC 2.0 message the endpoint reads.
    pub(crate) fn not_a_message() -> Self {
        Self::new(
            ErrorKind::Invalid,
            "invalid_request",
            "The request body is not a JSON-RPC 2.0 message (one object with jsonrpc, method, and an integer or string id).",
            "请求体不是 JSON-RPC 2.0 消息（应为一个对象，含 jsonrpc、method，以及整数或字符串形式的 id）。",
        )
    }

    /// A request of a method that takes `params` sent without them.
    pub(crate) fn params_missing(method: &str) -> Self {
        Self::new(
            ErrorKind::Invalid,
            "validation_failed",
            format!("{method} needs params; see the MCP specification for what they hold."),
            format!("{method} 需要 params 参数；其内容请参阅 MCP 规范。"),
        )
        .with_field("params")
    }

    /// A request of a method this server answers whose `params` are not what it takes.
    pub(crate) fn params_malformed(method: Option<&str>) -> Self {
        let (en, zh) = match method {
            Some(method) => (format!("The params of {method}"), format!("{method} 的 params 参数")),
            None => ("The params of this request".to_owned(), "此请求的 params 参数".to_owned()),
        };
        Self::new(
            ErrorKind::Invalid,
            "validation_failed",
            format!("{en} are not what it takes; see the MCP specification for what they hold."),
            format!("{zh}不符合要求；其内容请参阅 MCP 规范。"),
        )
        .with_field("params")
    }

    /// A `tools/call` of a tool this server does not have (it is read-only: no tool writes).
    pub(crate) fn unknown_tool(name: &str) -> Self {
        let name = echo(name);
        Self::new(
            ErrorKind::Invalid,
            "not_found",
            format!("This server has no tool {name}; tools/list lists its tools (all read-only; writes go through the REST API, see /skill.md)."),
            format!("本服务器没有名为 {name} 的工具；tools/list 列出全部工具（都是只读的；写操作请使用 REST API，见 /skill.md）。"),
        )
        .with_field("name")
    }

    /// A `resources/read` of a URI no resource or template of this server names.
    pub(crate) fn unknown_resource(uri: &str) -> Self {
        let uri = echo(uri);
        Self::new(
            ErrorKind::Invalid,
            "not_found",
            format!("There is no resource at {uri}; resources/list and resources/templates/list name what there is."),
            format!("{uri} 处没有资源；可用的资源见 resources/list 和 resources/templates/list。"),
        )
        .with_field("uri")
    }

    /// A method this server does not answer (it offers tools, resources and completion only).
    pub(crate) fn unknown_method(method: &str) -> Self {
        let method = echo(method);
        Self::new(
            ErrorKind::Invalid,
            "not_found",
            format!("This server does not answer {method}: it offers tools, resources and completion, as initialize's capabilities say."),
            format!("本服务器不响应 {method}：它只提供工具、资源和补全，见 initialize 返回的 capabilities。"),
        )
        .with_field("method")
    }

    /// What the transport refused before any message was read (rmcp's checks and the Host and
    /// Origin guard answer in English plain text), by the answer's status; `detail` is that
    /// text, passed on where no message of ours says more.
    pub(crate) fn refused(status: http::StatusCode, detail: &str) -> Self {
        use http::StatusCode;
        let invalid = |code: &str, en: String, zh: String| Self::new(ErrorKind::Invalid, code, en, zh);
        match status {
            StatusCode::FORBIDDEN => invalid(
                "forbidden",
                "This MCP endpoint answers only requests for its own host, sent from no page or from a page of its own origin.".into(),
                "此 MCP 端点只接受发往本站主机的请求，且请求须不来自网页，或来自本站自己的网页。".into(),
            ),
            StatusCode::NOT_ACCEPTABLE => invalid(
                "not_acceptable",
                "Accept must name both application/json and text/event-stream (the streamable HTTP transport).".into(),
                "Accept 请求头必须同时包含 application/json 和 text/event-stream（可流式 HTTP 传输）。".into(),
            ),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => invalid(
                "unsupported_media_type",
                "Send the JSON-RPC message with Content-Type: application/json.".into(),
                "请以 Content-Type: application/json 发送 JSON-RPC 消息。".into(),
            ),
            StatusCode::METHOD_NOT_ALLOWED => invalid(
                "method_not_allowed",
                "The MCP endpoint takes POST only: this server keeps no sessions (no GET stream, no DELETE).".into(),
                "MCP 端点只接受 POST 请求：本服务器不保留会话（没有 GET 事件流，也没有 DELETE）。".into(),
            ),
            _ if detail.contains("MCP-Protocol-Version") => invalid(
                "unsupported_protocol_version",
                format!("The MCP-Protocol-Version header names a revision this server does not speak; leave it out or send the one initialize agreed ({detail})."),
                format!("MCP-Protocol-Version 请求头所写的协议版本本服务器不支持；请去掉该请求头，或使用 initialize 时商定的版本（{detail}）。"),
            ),
            _ => invalid(
                "bad_request",
                format!("The MCP endpoint refused this request: {detail}"),
                format!("MCP 端点拒绝了此请求：{detail}"),
            ),
        }
    }

    /// The REST error body for this error.
    pub fn envelope(&self) -> Value {
        serde_json::json!({ "error": self })
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message_en)
    }
}

impl std::error::Error for ToolError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_matches_the_rest_error_body() {
        let error = ToolError::new(
            ErrorKind::Invalid,
            "validation_failed",
            "limit must be 1-100",
            "limit 须为 1-100",
        )
        .with_field("limit");
        assert_eq!(
            error.envelope(),
            serde_json::json!({"error": {
                "code": "validation_failed",
                "message_en": "limit must be 1-100",
                "message_zh": "limit 须为 1-100",
                "field": "limit",
            }})
        );
        let no_field = ToolError::new(ErrorKind::NotFound, "not_found", "no such agent", "没有这个代理");
        assert_eq!(no_field.envelope()["error"]["field"], Value::Null);
    }
}

/// Longest part of what a caller sent (a URI, a tool or method name) that an error message
/// repeats: the message reaches the client and rmcp's own log line, and neither should grow
/// with the size of the request.
pub const ECHO_MAX_CHARS: usize = 120;

/// `input` as an error message may repeat it: whole when short, else its first
/// [`ECHO_MAX_CHARS`] characters and how many more there were; a control character shows as
/// U+FFFD (a message is read by people and models, and must not carry a caller's escapes).
pub(crate) fn echo(input: &str) -> std::borrow::Cow<'_, str> {
    let shown: std::borrow::Cow<'_, str> = match input.char_indices().nth(ECHO_MAX_CHARS) {
        None => input.into(),
        Some((cut, _)) => format!("{}… ({} more bytes)", &input[..cut], input.len() - cut).into(),
    };
    if shown.chars().any(char::is_control) {
        shown
            .chars()
            .map(|c| if c.is_control() { char::REPLACEMENT_CHARACTER } else { c })
            .collect::<String>()
            .into()
    } else {
        shown
    }
}

#[cfg(test)]
mod echo_tests {
    use super::*;

    #[test]
    fn long_input_is_cut_to_a_bounded_prefix() {
        assert_eq!(echo("agentdir://agents/bob"), "agentdir://agents/bob");
        let long = "界".repeat(60_000);
        let shown = echo(&long);
        assert!(shown.chars().count() < ECHO_MAX_CHARS + 40, "{} chars", shown.chars().count());
        assert!(shown.starts_with(&"界".repeat(ECHO_MAX_CHARS)));
        assert!(shown.ends_with(&format!("({} more bytes)", (60_000 - ECHO_MAX_CHARS) * 3)));
        assert_eq!(echo("tool\u{1b}[31m\n"), "tool\u{fffd}[31m\u{fffd}");
    }
}
