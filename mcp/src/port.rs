//! The read port: everything this crate needs from the directory, and nothing that writes.
//!
//! The core implements [`DirectoryRead`]; this crate never sees SQL, HTTP routing or business
//! rules. Arguments reach the port as the raw JSON object the client sent, because the core
//! already validates JSON against the same schema it enforces on REST and owns the bilingual
//! messages for every violation. Taking a typed `Parameters<T>` here instead would let rmcp
//! reject bad arguments as a JSON-RPC protocol error, which MCP clients hide from the model.

use std::future::Future;

use http::request::Parts;
use schemars::JsonSchema;
use serde::Serialize;

use crate::ToolError;

/// Tool arguments exactly as the client sent them (`{}` when it sent none).
pub type Arguments = serde_json::Map<String, serde_json::Value>;

/// The short rendering a person reads in a chat client, next to the structured result.
///
/// Render the items only; the adapter appends the paging line (from the list envelope's
/// `total`/`limit`/`offset`) and the untrusted-content notice (from the top-level `notice`).
/// Keep identifiers (handles, ids) in the text: a model reading only the text needs them to
/// call the next tool.
pub trait ToText {
    fn to_text(&self) -> String;
}

/// What every tool result type must be: JSON with a published schema and a text rendering.
///
/// Outputs are the REST response bodies, including the top-level `notice: {en, zh}`, so MCP and
/// REST answer with the same data; a list may be the lean form of its REST body (the core's
/// `search_agents` is: what every hit repeats said once).
pub trait ToolOutput: Serialize + JsonSchema + ToText + Send + 'static {
    /// The output's JSON when the core holds it rendered already (a cached card or call): the
    /// adapter then frames these bytes as they are instead of serialising the output again.
    /// They must be exactly what serialising the output gives.
    fn rendered_json(&self) -> Option<&[u8]> {
        None
    }

    /// A tag of [`rendered_json`](Self::rendered_json) that changes exactly when its bytes do
    /// (the document's strong ETag): the short path remembers the result it framed under it.
    fn rendered_tag(&self) -> Option<&str> {
        None
    }
}

/// Read-only access to the directory, implemented by the core.
///
/// The `*Input` types are never deserialized by this crate: they only supply each tool's
/// `inputSchema`, so the limits (`limit` ≤ 100 for agents, ≤ 50 for calls, the handle pattern…)
/// are declared once, on the core's own types. Each method must validate `args` against that
/// same type and answer [`ToolError`] (`validation_failed` with `field`) when they do not fit.
/// Every input schema must have root type `object`.
pub trait DirectoryRead: Clone + Send + Sync + 'static {
    /// Schema of `search_agents` (the `GET /api/agents` query: q, capability, language,
    /// verified, live, min_level, new, limit, offset).
    type SearchAgentsInput: JsonSchema + 'static;
    /// Schema of `get_agent`; must have a `handle` property (resource reads send `{"handle"}`).
    type GetAgentInput: JsonSchema + 'static;
    /// Schema of `search_calls` (the `GET /api/posts` query: q, kind, tag, limit, offset).
    type SearchCallsInput: JsonSchema + 'static;
    /// Schema of `get_call`; must have an `id` property (resource reads send `{"id"}`).
    type GetCallInput: JsonSchema + 'static;
    /// Schema of `list_collaborations` (the `GET /api/collabs` query: handle, limit, offset).
    type ListCollaborationsInput: JsonSchema + 'static;

    /// Body of `GET /api/agents`: `{notice, agents, total, limit, offset}`.
    type AgentList: ToolOutput;
    /// Body of `GET /api/agents/{handle}`: `{notice, agent, evidence, recent_posts}`.
    type AgentCard: ToolOutput;
    /// Body of `GET /api/posts`: `{notice, posts, total, limit, offset}`.
    type CallList: ToolOutput;
    /// Body of `GET /api/posts/{id}`: the call with its replies.
    type CallDetail: ToolOutput;
    /// Body of `GET /api/collabs`: `{notice, collabs, total, limit, offset}`.
    type CollaborationList: ToolOutput;
    /// Body of `GET /api/stats`.
    type Stats: ToolOutput;

    /// `request` is the HTTP request the call came in (its headers and connection), so the core
    /// counts the client as it does on REST; `None` when the call did not come over HTTP.
    fn search_agents(
        &self,
        args: Arguments,
        request: Option<&Parts>,
    ) -> impl Future<Output = Result<Self::AgentList, ToolError>> + Send;

    /// Unknown handles (a handle that breaks the pattern included) answer `not_found`.
    fn get_agent(&self, args: Arguments) -> impl Future<Output = Result<Self::AgentCard, ToolError>> + Send;

    /// `request` as for `search_agents`: a call search reads its need with the same share.
    fn search_calls(
        &self,
        args: Arguments,
        request: Option<&Parts>,
    ) -> impl Future<Output = Result<Self::CallList, ToolError>> + Send;

    /// Unknown, deleted or hidden calls answer `not_found`, as on REST.
    fn get_call(&self, args: Arguments) -> impl Future<Output = Result<Self::CallDetail, ToolError>> + Send;

    fn list_collaborations(
        &self,
        args: Arguments,
    ) -> impl Future<Output = Result<Self::CollaborationList, ToolError>> + Send;

    /// Takes no arguments; whatever the client sent is ignored.
    fn get_stats(&self) -> impl Future<Output = Result<Self::Stats, ToolError>> + Send;

    /// The onboarding guide served at `/skill.md`, with the base URL filled in.
    fn skill_md(&self) -> String;

    /// Up to `limit` handles starting with `prefix`, for completing the `handle` of the agent
    /// card template. Optional: without it clients simply get no suggestions.
    fn complete_handles(&self, prefix: &str, limit: usize) -> impl Future<Output = Vec<String>> + Send {
        let _ = (prefix, limit);
        std::future::ready(Vec::new())
    }
}
