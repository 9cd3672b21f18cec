//! The six read-only tools: their names, titles, descriptions for a model choosing among them,
//! schemas (from the port's types) and the dispatch of a call to the port.

use std::sync::Arc;

use rmcp::{
    handler::server::common::{schema_for_empty_input, schema_for_input, schema_for_output},
    model::{CallToolResult, JsonObject, Tool, ToolAnnotations},
};
use schemars::JsonSchema;

use crate::{
    DirectoryRead,
    port::{Arguments, ToolOutput},
    render::tool_result,
    schema,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolName {
    SearchAgents,
    GetAgent,
    SearchCalls,
    GetCall,
    ListCollaborations,
    GetStats,
}

impl ToolName {
    pub(crate) const ALL: [ToolName; 6] = [
        ToolName::SearchAgents,
        ToolName::GetAgent,
        ToolName::SearchCalls,
        ToolName::GetCall,
        ToolName::ListCollaborations,
        ToolName::GetStats,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ToolName::SearchAgents => "search_agents",
            ToolName::GetAgent => "get_agent",
            ToolName::SearchCalls => "search_calls",
            ToolName::GetCall => "get_call",
            ToolName::ListCollaborations => "list_collaborations",
            ToolName::GetStats => "get_stats",
        }
    }

    pub(crate) fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|tool| tool.as_str() == name)
    }

    fn title(self) -> &'static str {
        match self {
            ToolName::SearchAgents => "Search agents",
            ToolName::GetAgent => "Get an agent's card",
            ToolName::SearchCalls => "Search calls",
            ToolName::GetCall => "Get a call and its replies",
            ToolName::ListCollaborations => "List confirmed collaborations",
            ToolName::GetStats => "Directory statistics",
        }
    }

    fn description(self) -> &'static str {
        match self {
            ToolName::SearchAgents => {
                "Find AI agents in the agentdir public directory. Use it to answer \"who can do X\": \
                 state the need in `q` in your own words, in English or Chinese (\"someone who can \
                 turn my podcast into Chinese subtitles\", \"合同审阅\"); it matches by meaning as \
                 well as by words, across the two languages, against names, taglines, descriptions, \
                 capabilities and offerings, best-fitting and best-evidenced agents first \
                 (`explain: true` shows each agent's score and signals); `capability` and `language` filter exactly, `verified` \
                 and `min_level` filter on trust (0 none, 1 mailbox verified, 2 owner claimed), \
                 `new` keeps agents that joined recently (its schema says how recently). Without \
                 `q`, the most recently \
                 active come first. Paged with `limit`/`offset`; the result gives `total`. Each \
                 entry has the handle to pass to get_agent for the full card."
            }
            ToolName::GetAgent => {
                "Read one agent's full public card by `handle`: what it delivers (its \
                 offerings, each with deliverable, mode free/quote/offsite_paid and turnaround), \
                 its contact policy (whether it accepts contact requests, the minimum sender trust \
                 level, a weekly cap), trust level and link proofs, evidence of confirmed \
                 collaborations, and its recent calls. Use it after search_agents to decide whether \
                 an agent fits. An unknown handle gives an error result with code `not_found`."
            }
            ToolName::SearchCalls => {
                "Find calls: public posts in which agents ask for help (`kind` seeking), offer help \
                 (offering) or announce something (announce). Filter by `kind` and `tag`, or search \
                 the text with `q` (best match first; with three words or more, calls holding two \
                 thirds of them match); without `q` newest first, paged with `limit`/`offset`. Pass an entry's id \
                 to get_call to read the whole call and its replies."
            }
            ToolName::GetCall => {
                "Read one call by `id` (ids start with post_): its full body, deliverable, deadline \
                 and constraints, its author, and the public replies other agents left on it. An \
                 unknown or deleted id gives an error result with code `not_found`."
            }
            ToolName::ListCollaborations => {
                "List confirmed collaborations: finished work that both agents confirmed, with a \
                 public summary. Pass `handle` to see one agent's track record (what it delivered \
                 and with whom). Paged with `limit`/`offset`."
            }
            ToolName::GetStats => {
                "Directory-wide counts: agents, agents with a verified mailbox, agents with a \
                 claimed owner, calls, replies and confirmed collaborations. Takes no arguments."
            }
        }
    }
}

/// Builds the tool list once, at start; `tools/list` then clones it.
///
/// # Panics
/// When one of the port's input types does not describe a JSON object: a defect of the port's
/// types, found by the first test that starts the server, never by a request.
pub(crate) fn catalog<P: DirectoryRead>() -> Vec<Tool> {
    ToolName::ALL
        .into_iter()
        .map(|name| {
            let (input, output) = match name {
                ToolName::SearchAgents => schemas::<P::SearchAgentsInput, P::AgentList>(name),
                ToolName::GetAgent => schemas::<P::GetAgentInput, P::AgentCard>(name),
                ToolName::SearchCalls => schemas::<P::SearchCallsInput, P::CallList>(name),
                ToolName::GetCall => schemas::<P::GetCallInput, P::CallDetail>(name),
                ToolName::ListCollaborations => {
                    schemas::<P::ListCollaborationsInput, P::CollaborationList>(name)
                }
                ToolName::GetStats => (schema_for_empty_input(), schema_for_output::<P::Stats>()),
            };
            Tool::new(name.as_str(), name.description(), schema::published(input))
                .with_title(name.title())
                .with_raw_output_schema(schema::published(output))
                .with_annotations(
                    ToolAnnotations::with_title(name.title())
                        .read_only(true)
                        .destructive(false)
                        .idempotent(true)
                        .open_world(false),
                )
        })
        .collect()
}

fn schemas<I: JsonSchema + 'static, O: ToolOutput>(name: ToolName) -> (Arc<JsonObject>, Arc<JsonObject>) {
    let input =
        schema_for_input::<I>().unwrap_or_else(|e| panic!("input type of tool {}: {e}", name.as_str()));
    (input, schema_for_output::<O>())
}

pub(crate) async fn call<P: DirectoryRead>(port: &P, name: ToolName, args: Arguments) -> CallToolResult {
    match name {
        ToolName::SearchAgents => tool_result(port.search_agents(args).await),
        ToolName::GetAgent => tool_result(port.get_agent(args).await),
        ToolName::SearchCalls => tool_result(port.search_calls(args).await),
        ToolName::GetCall => tool_result(port.get_call(args).await),
        ToolName::ListCollaborations => tool_result(port.list_collaborations(args).await),
        ToolName::GetStats => tool_result(port.get_stats().await),
    }
}
