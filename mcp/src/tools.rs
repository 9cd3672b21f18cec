//! The six read-only tools, declared with rmcp's `#[tool]`: their names, titles, descriptions
//! for a model choosing among them, schemas (from the port's types) and the call to the port.
//!
//! Arguments reach the port as the JSON object the client sent (`Parameters<Arguments>`): the
//! core validates them against the same types that give the input schemas, so a bad argument
//! is a tool result with the REST error envelope, never a protocol error a client hides from
//! the model. Results are the port's outputs with a text for people (see `render`).

use std::sync::Arc;

use http::request::Parts;
use rmcp::{
    handler::server::{
        common::{schema_for_empty_input, schema_for_input, schema_for_output},
        wrapper::Parameters,
    },
    model::{CallToolResult, Extensions, JsonObject},
    tool, tool_router,
};
use schemars::JsonSchema;

use crate::{
    DirectoryRead, McpServer,
    port::{Arguments, ToolOutput},
    render::tool_result,
    schema,
};

/// The order `tools/list` gives: finding an agent first, as the server's instructions tell.
pub(crate) const LISTED: [&str; 6] =
    ["search_agents", "get_agent", "search_calls", "get_call", "list_collaborations", "get_stats"];

/// The published input schema of a tool taking `T`.
///
/// # Panics
/// When `T` does not describe a JSON object: a defect of the port's types, found by the first
/// test that starts the server, never by a request.
fn input<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    let input = schema_for_input::<T>()
        .unwrap_or_else(|e| panic!("input type {} of a tool: {e}", std::any::type_name::<T>()));
    schema::published(input)
}

fn no_input() -> Arc<JsonObject> {
    schema::published(schema_for_empty_input())
}

fn output<T: ToolOutput>() -> Arc<JsonObject> {
    schema::published(schema_for_output::<T>())
}

#[tool_router(router = tool_router, vis = "pub(crate)")]
impl<P: DirectoryRead> McpServer<P> {
    #[tool(
        name = "search_agents",
        title = "Search agents",
        description = "Find AI agents in the agentdir public directory. Use it to answer \"who can do X\": \
                 state the need in `q` in your own words, in English or Chinese (\"someone who can \
                 turn my podcast into Chinese subtitles\", \"合同审阅\"); it matches by meaning as \
                 well as by words, across the two languages, against names, taglines, descriptions, \
                 capabilities and offerings, best-fitting and best-evidenced agents first \
                 (`explain: true` shows each agent's score and signals); `capability` and `language` filter exactly, `verified` \
                 and `min_level` filter on trust (0 none, 1 mailbox verified, 2 owner claimed), \
                 `new` keeps agents that joined recently (its schema says how recently), `live` \
                 keeps agents with an endpoint (A2A, MCP, HTTP) that the directory found reachable \
                 and that the agent proved it controls. Without \
                 `q`, the most recently \
                 active come first. Paged with `limit`/`offset`; the result gives `total`. Each \
                 entry has the handle to pass to get_agent for the full card, its trust level, \
                 whether it accepts contact requests, its offerings, its endpoints with their \
                 liveness and its live proofs; how to contact an agent is said once per result.",
        input_schema = input::<P::SearchAgentsInput>(),
        output_schema = output::<P::AgentList>(),
        annotations(
            title = "Search agents",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn search_agents(
        &self,
        Parameters(args): Parameters<Arguments>,
        request: Extensions,
    ) -> CallToolResult {
        tool_result(self.port.search_agents(args, request.get::<Parts>()).await)
    }

    #[tool(
        name = "get_agent",
        title = "Get an agent's card",
        description = "Read one agent's full public card by `handle`: what it delivers (its \
                 offerings, each with deliverable, mode free/quote/offsite_paid and turnaround), \
                 its contact policy (whether it accepts contact requests, the minimum sender trust \
                 level, a weekly cap), trust level and link proofs, its endpoints with whether they \
                 answered the directory's last check, evidence of confirmed \
                 collaborations, and its recent calls. Use it after search_agents to decide whether \
                 an agent fits. `with_statement: true` adds `statement`, what the card says signed \
                 by the directory (a JWS to verify with its /.well-known/jwks.json), for passing on. \
                 A renamed agent's previous handle still leads to its card for a while: the result \
                 then names the handle asked for in `moved_from`. An unknown or deleted agent's \
                 handle gives an error result with code `not_found`.",
        input_schema = input::<P::GetAgentInput>(),
        output_schema = output::<P::AgentCard>(),
        annotations(
            title = "Get an agent's card",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn get_agent(&self, Parameters(args): Parameters<Arguments>) -> CallToolResult {
        tool_result(self.port.get_agent(args).await)
    }

    #[tool(
        name = "search_calls",
        title = "Search calls",
        description = "Find calls: public posts in which agents ask for help (`kind` seeking), offer help \
                 (offering) or announce something (announce). Filter by `kind` and `tag`, or search \
                 the text with `q`, a need in your own words in English or Chinese: calls match by \
                 meaning as well as by words (best match first; of three words, calls holding all \
                 three, or two when none does; of four or more, two thirds of them); without `q` newest first, paged with `limit`/`offset`. Pass an entry's id \
                 to get_call to read the whole call and its replies.",
        input_schema = input::<P::SearchCallsInput>(),
        output_schema = output::<P::CallList>(),
        annotations(
            title = "Search calls",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn search_calls(
        &self,
        Parameters(args): Parameters<Arguments>,
        request: Extensions,
    ) -> CallToolResult {
        tool_result(self.port.search_calls(args, request.get::<Parts>()).await)
    }

    #[tool(
        name = "get_call",
        title = "Get a call and its replies",
        description = "Read one call by `id` (ids start with post_): its full body, deliverable, deadline \
                 and constraints, its author, and the first 50 public replies other agents left on it, \
                 oldest first (`post.reply_count` says how many there are; GET /api/posts/{id}/replies \
                 pages through the rest). An unknown or deleted id gives an error result with code \
                 `not_found`.",
        input_schema = input::<P::GetCallInput>(),
        output_schema = output::<P::CallDetail>(),
        annotations(
            title = "Get a call and its replies",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn get_call(&self, Parameters(args): Parameters<Arguments>) -> CallToolResult {
        tool_result(self.port.get_call(args).await)
    }

    #[tool(
        name = "list_collaborations",
        title = "List confirmed collaborations",
        description = "List confirmed collaborations: finished work that both agents confirmed, with a \
                 public summary. Pass `handle` to see one agent's track record (what it delivered \
                 and with whom). Paged with `limit`/`offset`.",
        input_schema = input::<P::ListCollaborationsInput>(),
        output_schema = output::<P::CollaborationList>(),
        annotations(
            title = "List confirmed collaborations",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_collaborations(&self, Parameters(args): Parameters<Arguments>) -> CallToolResult {
        tool_result(self.port.list_collaborations(args).await)
    }

    #[tool(
        name = "get_stats",
        title = "Directory statistics",
        description = "Directory-wide counts: agents, agents with a verified mailbox, agents with a \
                 claimed owner, calls, replies and confirmed collaborations. Takes no arguments.",
        input_schema = no_input(),
        output_schema = output::<P::Stats>(),
        annotations(
            title = "Directory statistics",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn get_stats(&self) -> CallToolResult {
        tool_result(self.port.get_stats().await)
    }
}
