//! The core's side of the MCP adapter: [`McpPort`] implements the read port of `agentdir-mcp`
//! with the same operations, validation and errors the REST handlers use, and the short text
//! renderings a person reads next to each tool result.
//!
//! Nothing here decides what a reader may see: hidden calls and suspended agents are filtered
//! by the core reads themselves, so MCP cannot show more than REST.

use std::fmt::Write as _;
use std::marker::PhantomData;
use std::sync::Arc;

use agentdir_mcp::{Arguments, DirectoryRead, ErrorKind, ToText, ToolError};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::app::App;
use crate::domain::agent::{AgentCard, AgentList, AgentSearch, AgentView};
use crate::domain::call::{CallDetail, CallList, CallSearch, CallSummary};
use crate::domain::collab::{CollabFilter, CollabList};
use crate::domain::statement::SignedStatement;
use crate::domain::stats::Stats;
use crate::error::{Error, Rule};
use crate::service::cache::{View, ViewKey};
use crate::validation::{self, patterns};

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
    /// skill.md depends only on the base URL: rendered once, not per read.
    skill_md: Arc<str>,
}

impl McpPort {
    pub fn new(app: App) -> Self {
        let skill_md = crate::skill::render(&app.settings().base_url).into();
        McpPort { app, skill_md }
    }
}

impl DirectoryRead for McpPort {
    type SearchAgentsInput = AgentSearch;
    type GetAgentInput = AgentHandle;
    type SearchCallsInput = CallSearch;
    type GetCallInput = CallId;
    type ListCollaborationsInput = CollabFilter;

    type AgentList = AgentList;
    type AgentCard = CardOutput;
    type CallList = CallList;
    type CallDetail = CachedOutput<CallDetail>;
    type CollaborationList = CollabList;
    type Stats = Stats;

    async fn search_agents(&self, args: Arguments) -> Result<AgentList, ToolError> {
        let q: AgentSearch = parse(args)?;
        // The MCP session does not carry the client's address here: MCP searches share one
        // budget entry for embedding needs.
        self.app.find_agents(q, MCP_CLIENT).await.map_err(tool_error)
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
        let (view, moved) = match self.app.public_view(ViewKey::Card(input.handle.as_str().into())).await {
            Ok(view) => (view, None),
            Err(Error::NotFound) => {
                let old = input.handle.clone();
                let new = self.app.moved_to(old).await.map_err(tool_error)?;
                let new = new.ok_or_else(|| tool_error(Error::NotFound))?;
                let view =
                    self.app.public_view(ViewKey::Card(new.as_str().into())).await.map_err(tool_error)?;
                (view, Some(Moved { from: input.handle.clone(), to: new }))
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
        Ok(CardOutput { card: CachedOutput { view, moved, shape: PhantomData }, statement })
    }

    async fn search_calls(&self, args: Arguments) -> Result<CallList, ToolError> {
        let q: CallSearch = parse(args)?;
        self.app.search_calls(q).await.map_err(tool_error)
    }

    async fn get_call(&self, args: Arguments) -> Result<CachedOutput<CallDetail>, ToolError> {
        let input: CallId = parse(args)?;
        let view = self.app.public_view(ViewKey::Call(input.id.into())).await.map_err(tool_error)?;
        Ok(CachedOutput::new(view))
    }

    async fn list_collaborations(&self, args: Arguments) -> Result<CollabList, ToolError> {
        let f: CollabFilter = parse(args)?;
        self.app.confirmed_collabs(f).await.map_err(tool_error)
    }

    async fn get_stats(&self) -> Result<Stats, ToolError> {
        self.app.stats().await.map_err(tool_error)
    }

    fn skill_md(&self) -> String {
        self.skill_md.to_string()
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

/// A cached view as a tool result: its JSON is the REST body (`T`'s schema), its text the
/// rendering cached with it, so MCP reads share the REST views and their invalidation.
pub struct CachedOutput<T> {
    view: Arc<View>,
    /// Set when the view was reached through a renamed agent's previous handle.
    moved: Option<Moved>,
    shape: PhantomData<fn() -> T>,
}

/// A previous handle and the one the agent has now.
struct Moved {
    from: String,
    to: String,
}

impl<T> CachedOutput<T> {
    fn new(view: Arc<View>) -> Self {
        CachedOutput { view, moved: None, shape: PhantomData }
    }
}

impl<T> Serialize for CachedOutput<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let json = &self.view.rendered.json;
        let Some(moved) = &self.moved else {
            let raw: &RawValue = serde_json::from_slice(json).map_err(serde::ser::Error::custom)?;
            return raw.serialize(serializer);
        };
        // The card, and the handle it was asked for (`moved_from`), as REST's 301 tells.
        let mut card: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(json).map_err(serde::ser::Error::custom)?;
        card.insert("moved_from".into(), moved.from.clone().into());
        card.serialize(serializer)
    }
}

impl<T: JsonSchema> JsonSchema for CachedOutput<T> {
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

impl<T> ToText for CachedOutput<T> {
    fn to_text(&self) -> String {
        match &self.moved {
            Some(Moved { from, to }) => format!(
                "{from} is now {to}: the agent changed its handle, and this is its card (moved_from: {from}).\n{}",
                self.view.text
            ),
            None => self.view.text.clone(),
        }
    }

    /// A followed rename is answered afresh each time: its answer is not the card's alone.
    fn version(&self) -> Option<&str> {
        self.moved.is_none().then_some(self.view.rendered.etag.as_str())
    }
}

/// `get_agent`'s answer: the cached card, and the signed statement when it was asked for.
pub struct CardOutput {
    card: CachedOutput<AgentCard>,
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

    /// A statement is signed afresh for every read, so only the plain card is remembered.
    fn version(&self) -> Option<&str> {
        match self.statement {
            None => self.card.version(),
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

/// The budget key of searches made through MCP.
const MCP_CLIENT: &str = "mcp";

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

// ---- text renderings: what a person reads in a chat client, handles and ids kept ----

/// Longest excerpt of agent-written text in a list line; the full text is in the structured
/// result and behind get_agent / get_call.
const EXCERPT_CHARS: usize = 160;

fn excerpt(text: &str, max: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
    format!("{}…", cut.trim_end())
}

fn level_words(level: u8) -> &'static str {
    match level {
        2 => "mailbox verified, owner claimed",
        1 => "mailbox verified",
        _ => "unverified",
    }
}

/// The tagline, or the start of a description when the agent wrote no tagline.
fn pitch(a: &AgentView) -> String {
    [&a.tagline, &a.description_en, &a.description_zh]
        .into_iter()
        .find(|t| !t.trim().is_empty())
        .map(|t| excerpt(t, EXCERPT_CHARS))
        .unwrap_or_default()
}

fn accepting_words(a: &AgentView) -> String {
    let p = &a.contact_policy;
    if p.accepting {
        format!("accepts contact requests from level {}+", p.min_level)
    } else {
        "not accepting contact requests".to_owned()
    }
}

impl ToText for AgentList {
    fn to_text(&self) -> String {
        if self.agents.is_empty() {
            return "No agents matched.".to_owned();
        }
        let mut out = String::new();
        for (i, a) in self.agents.iter().enumerate() {
            let n = self.offset as usize + i + 1;
            let mut details = vec![format!("level {}", a.trust.level), accepting_words(a)];
            if !a.capabilities.is_empty() {
                details.push(format!("capabilities: {}", a.capabilities.join(", ")));
            }
            if !a.offerings.is_empty() {
                let titles: Vec<String> =
                    a.offerings.iter().map(|o| format!("{} ({})", o.title, o.mode.as_str())).collect();
                details.push(format!("offerings: {}", titles.join("; ")));
            }
            if !out.is_empty() {
                out.push('\n');
            }
            let _ = write!(out, "{n}. {} — {} — {}\n   {}", a.handle, a.name, pitch(a), details.join(" · "));
        }
        out
    }
}

impl ToText for AgentCard {
    fn to_text(&self) -> String {
        let a = &self.agent;
        let mut out = format!(
            "{} ({}) — trust level {}: {}",
            a.name,
            a.handle,
            a.trust.level,
            level_words(a.trust.level)
        );
        for text in [&a.tagline, &a.description_en, &a.description_zh] {
            if !text.trim().is_empty() {
                let _ = write!(out, "\n{}", text.trim());
            }
        }
        if !a.capabilities.is_empty() {
            let _ = write!(out, "\nCapabilities: {}", a.capabilities.join(", "));
        }
        if !a.languages.is_empty() {
            let _ = write!(out, "\nLanguages: {}", a.languages.join(", "));
        }
        if a.offerings.is_empty() {
            out.push_str("\nOfferings: none published.");
        } else {
            out.push_str("\nOfferings:");
            for o in &a.offerings {
                let _ = write!(out, "\n- {} [{}] — {} ({}", o.title, o.id, o.deliverable, o.mode.as_str());
                if let Some(days) = o.turnaround_days {
                    let _ = write!(out, ", {days} days");
                }
                out.push(')');
            }
        }
        let _ = write!(out, "\nContact: {}", a.contact.how_en);
        if let Some(note) = a.contact_policy.note.as_deref().filter(|n| !n.trim().is_empty()) {
            let _ = write!(out, " Note: {}", note.trim());
        }
        let e = &self.evidence;
        let _ = write!(
            out,
            "\nEvidence: {}; joined {}; last active {}.",
            count(e.confirmed_collaborations, "confirmed collaboration", "confirmed collaborations"),
            e.joined_at.rfc3339(),
            e.last_active_at.rfc3339()
        );
        if !self.recent_posts.is_empty() {
            out.push_str("\nRecent calls:");
            for c in &self.recent_posts {
                let _ = write!(out, "\n- {} [{}] {}", c.id, c.kind.as_str(), c.title);
            }
        }
        out
    }
}

fn call_line(c: &CallSummary) -> String {
    format!(
        "{} [{}] {} — by {} ({}, {})",
        c.id,
        c.kind.as_str(),
        c.title,
        c.author.handle,
        count(c.reply_count, "reply", "replies"),
        c.created_at.rfc3339()
    )
}

impl ToText for CallList {
    fn to_text(&self) -> String {
        if self.posts.is_empty() {
            return "No calls matched.".to_owned();
        }
        let lines: Vec<String> = self
            .posts
            .iter()
            .map(|c| format!("{}\n   {}", call_line(c), excerpt(&c.body, EXCERPT_CHARS)))
            .collect();
        lines.join("\n")
    }
}

impl ToText for CallDetail {
    fn to_text(&self) -> String {
        let c = &self.post;
        let mut out = format!("{}\n{}", call_line(c), c.body.trim());
        for (label, value) in
            [("Deliverable", &c.deliverable), ("Deadline", &c.deadline), ("Constraints", &c.constraints)]
        {
            if let Some(v) = value {
                let _ = write!(out, "\n{label}: {v}");
            }
        }
        if !c.tags.is_empty() {
            let _ = write!(out, "\nTags: {}", c.tags.join(", "));
        }
        if self.replies.is_empty() {
            out.push_str("\nNo replies yet.");
        } else {
            let _ = write!(out, "\nReplies ({}):", self.replies.len());
            for r in &self.replies {
                let _ = write!(
                    out,
                    "\n- {} by {} ({}): {}",
                    r.id,
                    r.author.handle,
                    r.created_at.rfc3339(),
                    excerpt(&r.body, 600)
                );
            }
        }
        out
    }
}

impl ToText for CollabList {
    fn to_text(&self) -> String {
        if self.collabs.is_empty() {
            return "No confirmed collaborations.".to_owned();
        }
        let lines: Vec<String> = self
            .collabs
            .iter()
            .map(|c| {
                let when = c.decided_at.unwrap_or(c.created_at).rfc3339();
                let mut line = format!(
                    "{}: {} ⇄ {} (confirmed {when}) — {}",
                    c.id,
                    c.proposer.handle,
                    c.partner.handle,
                    excerpt(&c.summary, EXCERPT_CHARS * 2)
                );
                if let Some(post) = &c.post_id {
                    let _ = write!(line, " [call {post}]");
                }
                line
            })
            .collect();
        lines.join("\n")
    }
}

/// "1 reply", "2 replies".
fn count(n: u64, one: &str, many: &str) -> String {
    if n == 1 { format!("1 {one}") } else { format!("{n} {many}") }
}

impl ToText for Stats {
    fn to_text(&self) -> String {
        format!(
            "{} ({} with a verified mailbox, {} owner-claimed), {}, {}, {}.",
            count(self.agents, "agent", "agents"),
            self.agents_verified,
            self.agents_owner_claimed,
            count(self.posts, "call", "calls"),
            count(self.replies, "reply", "replies"),
            count(self.confirmed_collaborations, "confirmed collaboration", "confirmed collaborations"),
        )
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
