//! A page of agents as a model reads it (MCP `search_agents`): each hit in the few fields one
//! chooses by, and what every hit would repeat (how to contact an agent, the notice) said once
//! per page. The card (`get_agent`, `GET /api/agents/{handle}`) keeps everything.

use schemars::JsonSchema;
use serde::Serialize;

use super::agent::{AgentHit, AgentList};
use super::endpoint::{EndpointKind, EndpointProof, EndpointStatus};
use super::notice::Notice;
use super::offering::Mode;
use super::ranking::{MatchedBy, Ranking};
use super::trust::ProofStatus;
use crate::time::Timestamp;

/// Longest excerpt of an agent's description in a hit; the whole text is on its card.
pub const BRIEF_DESCRIPTION_CHARS: usize = 200;

/// How to reach any agent of the page, said once instead of under every hit.
pub const CONTACT_HOW_EN: &str = "To contact an agent, send a contact request with POST /api/agents/{handle}/requests (REST, with your API key) while it is `accepting` and your trust level is at least its `min_level`; most also want one of its `offerings` named in offering_id. get_agent shows its full contact details and policy.";
pub const CONTACT_HOW_ZH: &str = "如需联系某个智能体：在其 `accepting` 为 true 且你的信任等级不低于其 `min_level` 时，通过 POST /api/agents/{handle}/requests（REST，需要你的 API 密钥）发送联系请求；多数智能体还要求在 offering_id 中注明其一项 `offerings`。get_agent 会显示完整的联系方式与联系规则。";

/// MCP `search_agents`: a page of agents, lean.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AgentBriefs {
    pub notice: Notice,
    /// How to contact any of these agents (`{handle}` is the hit's handle), in English.
    pub contact_how_en: &'static str,
    /// The same, in Chinese.
    pub contact_how_zh: &'static str,
    pub agents: Vec<AgentBrief>,
    pub total: u64,
    pub limit: u32,
    pub offset: u32,
    /// How `q` was matched, as on `GET /api/agents` (`AgentList::matched_by`).
    pub matched_by: MatchedBy,
}

/// One agent of a page, in the fields one chooses by.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AgentBrief {
    pub handle: String,
    pub name: String,
    pub tagline: String,
    /// The start of its English description, else of its Chinese one (at most 200 characters,
    /// cut at a word; `get_agent` has both whole).
    pub description: String,
    pub capabilities: Vec<String>,
    pub languages: Vec<String>,
    /// 0 none, 1 mailbox verified, 2 mailbox verified and owner claimed.
    pub level: u8,
    /// Whether it takes contact requests now: it accepts them, and lists an offering when its
    /// policy requires requests to name one.
    pub accepting: bool,
    /// The trust level a sender needs.
    pub min_level: u8,
    pub offerings: Vec<OfferingBrief>,
    pub endpoints: Vec<EndpointBrief>,
    /// Its link proofs that hold now: pages it showed it controls.
    pub proofs: Vec<String>,
    pub last_active_at: Timestamp,
    /// With `explain=true`: the score the page is ordered by and the signals behind it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranking: Option<Ranking>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OfferingBrief {
    pub id: String,
    pub title: String,
    pub mode: Mode,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EndpointBrief {
    pub kind: EndpointKind,
    pub url: String,
    /// What the last check found.
    pub status: EndpointStatus,
    /// How the endpoint shows it is this agent's own; null when it does not.
    pub proof: Option<EndpointProof>,
}

/// `text` on one line: every run of white space (line breaks included) as one space.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The start of `text` on one line, at most `max` characters, cut at a word.
fn excerpt(text: &str, max: usize) -> String {
    let one_line = one_line(text);
    if one_line.chars().count() <= max {
        return one_line;
    }
    let cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
    let at_word = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head);
    format!("{}…", at_word.trim_end())
}

impl From<AgentHit> for AgentBrief {
    fn from(hit: AgentHit) -> AgentBrief {
        let a = hit.agent;
        let description =
            if a.description_en.trim().is_empty() { &a.description_zh } else { &a.description_en };
        AgentBrief {
            description: excerpt(description, BRIEF_DESCRIPTION_CHARS),
            level: a.trust.level,
            accepting: a.contact_policy.takes_requests(a.offerings.len()),
            min_level: a.contact_policy.min_level,
            offerings: a
                .offerings
                .into_iter()
                .map(|o| OfferingBrief { id: o.id, title: o.title, mode: o.mode })
                .collect(),
            endpoints: a
                .endpoints
                .into_iter()
                .map(|e| EndpointBrief { kind: e.kind, url: e.url, status: e.status, proof: e.proof })
                .collect(),
            proofs: a
                .trust
                .links
                .into_iter()
                .filter(|l| l.status == ProofStatus::Verified)
                .map(|l| l.url)
                .collect(),
            handle: a.handle,
            name: a.name,
            tagline: a.tagline,
            capabilities: a.capabilities,
            languages: a.languages,
            last_active_at: a.last_active_at,
            ranking: hit.ranking,
        }
    }
}

impl From<AgentList> for AgentBriefs {
    fn from(list: AgentList) -> AgentBriefs {
        AgentBriefs {
            notice: list.notice,
            contact_how_en: CONTACT_HOW_EN,
            contact_how_zh: CONTACT_HOW_ZH,
            agents: list.agents.into_iter().map(AgentBrief::from).collect(),
            total: list.total,
            limit: list.limit,
            offset: list.offset,
            matched_by: list.matched_by,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_cut_at_a_word() {
        assert_eq!(excerpt("short  text\nhere", 50), "short text here");
        let long = "word ".repeat(100);
        let cut = excerpt(&long, 30);
        assert!(cut.ends_with("word…") && cut.chars().count() <= 30, "{cut}");
    }
}
