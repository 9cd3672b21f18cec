//! [`McpPort`]: the read port of `agentdir-mcp` over the directory. Cards and calls come from
//! the core's document cache, as the bytes REST serves; the other reads are the REST operations.

use std::marker::PhantomData;
use std::sync::Arc;

use agentdir_mcp::{Arguments, DirectoryRead, ErrorKind, ToText, ToolError, ToolOutput};
use axum::http::request::Parts;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::text::DocumentText;
use crate::app::App;
use crate::derived::documents::{Document, DocumentKey};
use crate::domain::agent::{AgentCard, AgentSearch};
use crate::domain::brief::AgentBriefs;
use crate::domain::call::{CallDetail, CallList, CallSearch};
use crate::domain::collab::{CollabFilter, CollabList};
use crate::domain::schema::patterns;
use crate::domain::statement::SignedStatement;
use crate::domain::stats::Stats;
use crate::error::{Error, Rule};
use crate::net::request_client_ip;
use crate::validation;

/// Arguments of `get_agent` (and of the `agentdir://agents/{handle}` resource).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(transform = crate::domain::reject_null)]
pub struct AgentHandle {
    /// The agent's handle as search_agents lists it (lower-case a-z, 0-9 and hyphen).
    #[schemars(pattern(patterns::HANDLE))]
    pub handle: String,
    /// true: add `statement`, the card's `agent` and `evidence` signed by the directory (the
    /// answer of GET /api/agents/{handle}/statement; verify it with /.well-known/jwks.json).
    pub with_statement: Option<bool>,
}

/// Arguments of `get_call` (and of the `agentdir://calls/{id}` resource).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(transform = crate::domain::reject_null)]
pub struct CallId {
    /// The call's id as search_calls lists it (it starts with `post_`).
    pub id: String,
}

/// The read port over the directory: a cheap clone (one `Arc`) per MCP request.
#[derive(Clone)]
pub struct McpPort {
    app: App,
    /// skill.md, rendered once per process (`skill::render`).
    skill_md: &'static str,
}

impl McpPort {
    pub fn new(app: App) -> Self {
        let skill_md = crate::skill::render(&app.settings().base_url);
        McpPort { app, skill_md }
    }
}

impl DirectoryRead for McpPort {
    type SearchAgentsInput = AgentSearch;
    type GetAgentInput = AgentHandle;
    type SearchCallsInput = CallSearch;
    type GetCallInput = CallId;
    type ListCollaborationsInput = CollabFilter;

    type AgentList = AgentBriefs;
    type AgentCard = CardOutput;
    type CallList = CallList;
    type CallDetail = DocumentOutput<CallDetail>;
    type CollaborationList = CollabList;
    type Stats = Stats;

    async fn search_agents(
        &self,
        args: Arguments,
        request: Option<&Parts>,
    ) -> Result<AgentBriefs, ToolError> {
        let q: AgentSearch = parse(args)?;
        // The client as REST counts it, so its network's share of the model is the same one.
        let client = request.map_or(UNKNOWN_CLIENT, |parts| request_client_ip(parts, &self.app));
        // Lean for a model's context: what every hit repeats is said once (`domain::brief`).
        self.app.find_agents(q, client).await.map(AgentBriefs::from).map_err(tool_error)
    }

    async fn get_agent(&self, args: Arguments) -> Result<CardOutput, ToolError> {
        let input = match validate::<AgentHandle>(args) {
            Ok(input) => input,
            // REST answers 404 for a path handle that breaks the pattern (it names no agent);
            // the tool and the resource answer the same, so a model meets one rule.
            Err(Error::Validation { field, rule: Rule::Handle }) if field == "handle" => {
                return Err(tool_error(Error::NotFound));
            }
            Err(e) => return Err(tool_error(e)),
        };
        // A renamed agent's previous handle leads to its card, as REST's 301 does.
        let (document, moved) =
            match self.app.public_document(DocumentKey::Card(input.handle.as_str().into())).await {
                Ok(document) => (document, None),
                Err(Error::NotFound) => {
                    let old = input.handle.clone();
                    let new = self.app.moved_to(old).await.map_err(tool_error)?;
                    let new = new.ok_or_else(|| tool_error(Error::NotFound))?;
                    let document = self
                        .app
                        .public_document(DocumentKey::Card(new.as_str().into()))
                        .await
                        .map_err(tool_error)?;
                    (document, Some(Moved { from: input.handle.clone(), to: new }))
                }
                Err(e) => return Err(tool_error(e)),
            };
        let statement = match input.with_statement {
            Some(true) => {
                let handle = moved.as_ref().map_or(input.handle, |m| m.to.clone());
                Some(self.app.statement(handle).await.map_err(tool_error)?)
            }
            _ => None,
        };
        Ok(CardOutput { card: DocumentOutput { document, moved, shape: PhantomData }, statement })
    }

    async fn search_calls(&self, args: Arguments, request: Option<&Parts>) -> Result<CallList, ToolError> {
        let q: CallSearch = parse(args)?;
        let client = request.map_or(UNKNOWN_CLIENT, |parts| request_client_ip(parts, &self.app));
        self.app.find_calls(q, client).await.map_err(tool_error)
    }

    async fn get_call(&self, args: Arguments) -> Result<DocumentOutput<CallDetail>, ToolError> {
        let input: CallId = parse(args)?;
        let document =
            self.app.public_document(DocumentKey::Call(input.id.into())).await.map_err(tool_error)?;
        Ok(DocumentOutput::new(document))
    }

    async fn list_collaborations(&self, args: Arguments) -> Result<CollabList, ToolError> {
        let f: CollabFilter = parse(args)?;
        self.app.confirmed_collabs(f).await.map_err(tool_error)
    }

    async fn get_stats(&self) -> Result<Stats, ToolError> {
        self.app.stats().await.map_err(tool_error)
    }

    fn skill_md(&self) -> String {
        self.skill_md.to_owned()
    }

    async fn complete_handles(&self, prefix: &str, limit: usize) -> Vec<String> {
        let prefix = prefix.to_owned();
        let limit = u32::try_from(limit).unwrap_or(u32::MAX);
        // Suggestions are a convenience: a failure means no suggestions, never an error.
        self.app.complete_handles(prefix, limit).await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "handle completion failed");
            Vec::new()
        })
    }
}

/// A document as a tool result: its JSON is the REST body (`T`'s schema) and its text is read
/// from those bytes, so MCP reads share the REST documents and their invalidation.
pub struct DocumentOutput<T> {
    document: Arc<Document>,
    /// Set when the document was reached through a renamed agent's previous handle.
    moved: Option<Moved>,
    shape: PhantomData<fn() -> T>,
}

/// A previous handle and the one the agent has now.
struct Moved {
    from: String,
    to: String,
}

impl<T> DocumentOutput<T> {
    fn new(document: Arc<Document>) -> Self {
        DocumentOutput { document, moved: None, shape: PhantomData }
    }

    fn json(&self) -> &[u8] {
        &self.document.rendered.json
    }
}

impl<T> Serialize for DocumentOutput<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Some(moved) = &self.moved else {
            let raw: &RawValue = serde_json::from_slice(self.json()).map_err(serde::ser::Error::custom)?;
            return raw.serialize(serializer);
        };
        // The card, and the handle it was asked for (`moved_from`), as REST's 301 tells.
        let mut card: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(self.json()).map_err(serde::ser::Error::custom)?;
        card.insert("moved_from".into(), moved.from.clone().into());
        card.serialize(serializer)
    }
}

impl<T: JsonSchema> JsonSchema for DocumentOutput<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }
    fn schema_id() -> std::borrow::Cow<'static, str> {
        T::schema_id()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}

impl<T: DocumentText> ToText for DocumentOutput<T> {
    fn to_text(&self) -> String {
        let text = T::text_of(self.json());
        match &self.moved {
            Some(Moved { from, to }) => format!(
                "{from} is now {to}: the agent changed its handle, and this is its card (moved_from: {from}).\n{text}"
            ),
            None => text,
        }
    }
}

impl<T: DocumentText + JsonSchema + 'static> ToolOutput for DocumentOutput<T> {
    /// A followed rename adds `moved_from`: its JSON is not the document's alone.
    fn rendered_json(&self) -> Option<&[u8]> {
        match self.moved {
            None => Some(self.json()),
            Some(_) => None,
        }
    }

    fn rendered_tag(&self) -> Option<&str> {
        match self.moved {
            None => Some(&self.document.rendered.etag),
            Some(_) => None,
        }
    }
}

/// `get_agent`'s answer: the cached card, and the signed statement when it was asked for.
pub struct CardOutput {
    card: DocumentOutput<AgentCard>,
    statement: Option<SignedStatement>,
}

/// The schema of `get_agent`'s answer: the card, plus `statement` when `with_statement` is true.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct AgentCardWithStatement {
    #[serde(flatten)]
    card: AgentCard,
    /// Present when `with_statement` was true: a JWS (flattened JSON serialisation, EdDSA) over
    /// this card's `agent` and `evidence`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    statement: Option<SignedStatement>,
}

impl Serialize for CardOutput {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Some(statement) = &self.statement else {
            return self.card.serialize(serializer);
        };
        let serde_json::Value::Object(mut card) =
            serde_json::to_value(&self.card).map_err(serde::ser::Error::custom)?
        else {
            return Err(serde::ser::Error::custom("a card is a JSON object"));
        };
        card.insert("statement".into(), serde_json::to_value(statement).map_err(serde::ser::Error::custom)?);
        card.serialize(serializer)
    }
}

impl JsonSchema for CardOutput {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        AgentCardWithStatement::schema_name()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        AgentCardWithStatement::json_schema(generator)
    }
}

/// Lists and counts are serialised as they are.
impl ToolOutput for AgentBriefs {}
impl ToolOutput for CallList {}
impl ToolOutput for CollabList {}
impl ToolOutput for Stats {}

impl ToText for CardOutput {
    fn to_text(&self) -> String {
        let card = self.card.to_text();
        match &self.statement {
            None => card,
            Some(_) => format!(
                "{card}\nSigned statement attached (structured content `statement`): a JWS over this card's agent and evidence; verify it with /.well-known/jwks.json."
            ),
        }
    }
}

impl ToolOutput for CardOutput {
    /// With a statement the JSON is more than the card's.
    fn rendered_json(&self) -> Option<&[u8]> {
        match self.statement {
            None => self.card.rendered_json(),
            Some(_) => None,
        }
    }

    fn rendered_tag(&self) -> Option<&str> {
        match self.statement {
            None => self.card.rendered_tag(),
            Some(_) => None,
        }
    }
}

/// Validates tool arguments exactly as REST validates the same query: against the input type's
/// JSON Schema, with the core's bilingual messages, and numbers or booleans sent as strings
/// read as the declared type (some MCP clients, the Inspector CLI among them, send them so).
fn validate<T: DeserializeOwned + JsonSchema + 'static>(args: Arguments) -> Result<T, Error> {
    validation::from_loose_json(args)
}

/// The client of searches that did not come over HTTP: one network of its own.
const UNKNOWN_CLIENT: std::net::IpAddr = std::net::IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED);

fn parse<T: DeserializeOwned + JsonSchema + 'static>(args: Arguments) -> Result<T, ToolError> {
    validate(args).map_err(tool_error)
}

/// The kind of failure, for the MCP adapter: decided by the status REST gives the same error.
fn error_kind(e: &Error) -> ErrorKind {
    match e.status() {
        404 => ErrorKind::NotFound,
        503 | 504 => ErrorKind::Busy,
        500..=599 => ErrorKind::Internal,
        _ => ErrorKind::Invalid,
    }
}

/// The core error as the MCP envelope: same code, messages and field as the REST body.
fn tool_error(e: Error) -> ToolError {
    let messages = e.messages();
    let error = ToolError::new(error_kind(&e), e.code(), messages.en, messages.zh);
    match e.field() {
        Some(field) => error.with_field(field),
        None => error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn strings_become_the_declared_integers_and_booleans_only() {
        let as_args = |v: Value| match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        };
        let ok: AgentSearch =
            validate(as_args(serde_json::json!({"limit": "20", "offset": 5, "verified": "true", "q": "42"})))
                .expect("valid");
        assert_eq!(
            (ok.limit, ok.offset, ok.verified, ok.q.as_deref()),
            (Some(20), Some(5), Some(true), Some("42"))
        );
        for (bad, field) in [
            (serde_json::json!({"new": "yes"}), "new"),
            (serde_json::json!({"min_level": "two"}), "min_level"),
        ] {
            match validate::<AgentSearch>(as_args(bad)) {
                Err(Error::Validation { field: f, .. }) => assert_eq!(f, field),
                other => panic!("expected a validation error, got {other:?}"),
            }
        }
    }

    #[test]
    fn errors_keep_code_messages_and_field() {
        let e = tool_error(Error::validation("limit", Rule::Range { min: Some(1), max: Some(100) }));
        assert_eq!(e.code, "validation_failed");
        assert_eq!(e.field.as_deref(), Some("limit"));
        assert!(e.message_en.contains("between 1 and 100"), "{}", e.message_en);
        assert!(e.message_zh.contains("1 到 100"), "{}", e.message_zh);
        let nf = tool_error(Error::NotFound);
        assert_eq!((nf.code.as_str(), nf.field), ("not_found", None));
    }

    #[test]
    fn handle_pattern_errors_are_told_apart_from_missing_or_mistyped() {
        let as_args = |v: Value| match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        };
        let rule = |v: Value| match validate::<AgentHandle>(as_args(v)) {
            Err(Error::Validation { field, rule }) => (field, rule),
            other => panic!("expected a validation error, got {other:?}"),
        };
        assert_eq!(rule(serde_json::json!({"handle": "Not A Handle"})), ("handle".into(), Rule::Handle));
        assert_eq!(rule(serde_json::json!({})), ("handle".into(), Rule::Required));
        assert_eq!(rule(serde_json::json!({"handle": 7})), ("handle".into(), Rule::Type("string")));
    }
}
