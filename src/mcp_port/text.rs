//! The short text a person reads in a chat client next to each tool result, handles and ids
//! kept (a model reading only the text needs them to call the next tool). The adapter appends
//! the paging line and the untrusted-content notice.
//!
//! Lists are rendered from the core's values. A card and a call are rendered from their
//! document's JSON, the very bytes the structured result carries, read back as the core's own
//! types (`AgentCard`, `CallDetail`), so the core keeps no text for MCP and the two cannot
//! disagree.

use std::fmt::Write as _;

use agentdir_mcp::ToText;
use serde::de::DeserializeOwned;

use crate::domain::agent::AgentCard;
use crate::domain::brief::{AgentBriefs, one_line};
use crate::domain::call::{CallDetail, CallList};
use crate::domain::collab::CollabList;
use crate::domain::endpoint::{EndpointProof, EndpointStatus, EndpointView};
use crate::domain::ranking::MatchedBy;
use crate::domain::stats::Stats;
use crate::domain::trust::ProofStatus;

/// Longest excerpt of agent-written text in a list line; the full text is in the structured
/// result and behind get_agent / get_call.
const EXCERPT_CHARS: usize = 160;
/// Longest excerpt of a reply under its call.
const REPLY_CHARS: usize = 600;

/// The text of a document, from its JSON (the REST body of `Self`).
pub trait DocumentText {
    fn text_of(json: &[u8]) -> String;
}

// Agent text inside one of the directory's lines is set with `one_line`: its line breaks would
// start lines of its own that read as the directory's ("Evidence: …", "Replies (1): …").

/// Agent-written prose of several lines, each marked as quoted (`> `), so no line of it can pose
/// as one of the directory's.
fn quoted(text: &str) -> String {
    // Every break a client may show as a new line: CR alone and the Unicode separators too.
    let lines = text.replace("\r\n", "\n").replace(['\r', '\u{2028}', '\u{2029}', '\u{85}'], "\n");
    lines
        .trim()
        .lines()
        .map(|line| {
            let line = line.trim_end();
            if line.is_empty() { ">".to_owned() } else { format!("> {line}") }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn excerpt(text: &str, max: usize) -> String {
    let one_line = one_line(text);
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

/// "1 reply", "2 replies".
fn count(n: u64, one: &str, many: &str) -> String {
    if n == 1 { format!("1 {one}") } else { format!("{n} {many}") }
}

/// One call as a line: id, kind, title, author, replies and date.
struct CallLine<'a> {
    id: &'a str,
    kind: &'a str,
    title: &'a str,
    author: &'a str,
    replies: u64,
    created_at: &'a str,
}

impl std::fmt::Display for CallLine<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} [{}] {} — by {} ({}, {})",
            self.id,
            self.kind,
            one_line(self.title),
            self.author,
            count(self.replies, "reply", "replies"),
            self.created_at
        )
    }
}

/// How a search's `q` was matched, in a line (none for a listing without `q`).
fn matched_by_line(m: MatchedBy) -> Option<String> {
    let how = match m {
        MatchedBy::Combined => "by words and meaning",
        MatchedBy::Meaning => "by meaning",
        MatchedBy::CombinedQuick => "by words and meaning, the need read by the quick encoder",
        MatchedBy::MeaningQuick => "by meaning, the need read by the quick encoder",
        MatchedBy::Words => "by words only",
        MatchedBy::WordsBusy => {
            "by words alone: the server could not read the need's meaning now, so a short list does not mean nothing fits"
        }
        MatchedBy::Recency => return None,
    };
    Some(format!("matched_by: {} ({how})", m.as_str()))
}

impl ToText for AgentBriefs {
    /// Per hit: handle, name, pitch; then level, whether it accepts requests, capabilities,
    /// offerings, live endpoints and live proofs — what the tool's description promises. How to
    /// contact any of them is said once, at the end.
    fn to_text(&self) -> String {
        let line = matched_by_line(self.matched_by);
        if self.agents.is_empty() {
            return match line {
                Some(line) => format!("No agents matched.\n{line}"),
                None => "No agents matched.".to_owned(),
            };
        }
        let mut out = line.map(|l| l + "\n").unwrap_or_default();
        for (i, a) in self.agents.iter().enumerate() {
            let n = self.offset as usize + i + 1;
            let accepting = if a.accepting {
                format!("accepts contact requests from level {}+", a.min_level)
            } else {
                "not accepting contact requests".to_owned()
            };
            let mut details = vec![format!("level {} ({})", a.level, level_words(a.level)), accepting];
            if !a.capabilities.is_empty() {
                details.push(format!("capabilities: {}", one_line(&a.capabilities.join(", "))));
            }
            if !a.offerings.is_empty() {
                let titles: Vec<String> = a
                    .offerings
                    .iter()
                    .map(|o| format!("{} ({})", one_line(&o.title), o.mode.as_str()))
                    .collect();
                details.push(format!("offerings: {}", titles.join("; ")));
            }
            let live: Vec<String> = a
                .endpoints
                .iter()
                .filter(|e| e.status == EndpointStatus::Live)
                .map(|e| {
                    let proven = if e.proof.is_some() { ", proven its own" } else { "" };
                    format!("{} {}{proven}", e.kind.as_str(), e.url)
                })
                .collect();
            if !live.is_empty() {
                details.push(format!("live endpoints: {}", live.join("; ")));
            }
            if !a.proofs.is_empty() {
                details.push(format!("proven links: {}", a.proofs.join(", ")));
            }
            if i > 0 {
                out.push('\n');
            }
            let pitch = if a.tagline.trim().is_empty() { &a.description } else { &a.tagline };
            let _ = write!(
                out,
                "{n}. {} — {} — {}\n   {}",
                a.handle,
                one_line(&a.name),
                excerpt(pitch, EXCERPT_CHARS),
                details.join(" · ")
            );
        }
        let _ = write!(out, "\n{}", self.contact_how_en);
        out
    }
}

impl ToText for CallList {
    fn to_text(&self) -> String {
        if self.posts.is_empty() {
            return "No calls matched.".to_owned();
        }
        let lines: Vec<String> = self
            .posts
            .iter()
            .map(|c| {
                let created_at = c.created_at.rfc3339();
                let line = CallLine {
                    id: &c.id,
                    kind: c.kind.as_str(),
                    title: &c.title,
                    author: &c.author.handle,
                    replies: c.reply_count,
                    created_at: &created_at,
                };
                format!("{line}\n   {}", excerpt(&c.body, EXCERPT_CHARS))
            })
            .collect();
        lines.join("\n")
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

// ---- documents, read back from their JSON as the core's own types ----

/// The document read as `J`, or no text when it does not read (a defect, logged): the
/// structured result still carries everything.
fn read<J: DeserializeOwned>(json: &[u8], render: impl FnOnce(J) -> String) -> String {
    match serde_json::from_slice::<J>(json) {
        Ok(document) => render(document),
        Err(e) => {
            tracing::error!(error = %e, "a document's JSON did not read as its text needs");
            String::new()
        }
    }
}

/// Most names of what an endpoint exposes shown in its line; the rest are in the structured
/// result.
const OBSERVED_NAMES_SHOWN: usize = 12;

/// One endpoint: kind, URL, what the last check found, whether it proved it is the agent's own,
/// and the names of the skills or tools it exposes.
fn endpoint_line(e: &EndpointView) -> String {
    let mut line = format!("{} {} — {}", e.kind.as_str(), e.url, e.status.as_str());
    if let Some(reason) = e.reason {
        let _ = write!(line, " ({})", reason.as_str());
    }
    let _ = write!(line, " since {}", e.status_since.rfc3339());
    if let Some(name) = e.name.as_deref() {
        let _ = write!(line, ", named {}", excerpt(name, EXCERPT_CHARS));
    }
    match e.proof {
        Some(EndpointProof::Answer) => line.push_str(", proven its own by its answer"),
        Some(EndpointProof::WellKnown) => line.push_str(", proven its own by its origin's well-known proof"),
        None => {}
    }
    for (label, observed) in [("skills", &e.skills), ("tools", &e.tools)] {
        let Some(observed) = observed.as_ref().filter(|o| !o.is_empty()) else { continue };
        let names: Vec<String> =
            observed.iter().take(OBSERVED_NAMES_SHOWN).map(|o| excerpt(&o.name, EXCERPT_CHARS)).collect();
        let more = observed.len().saturating_sub(OBSERVED_NAMES_SHOWN);
        let more = if more > 0 { format!(" and {more} more") } else { String::new() };
        let _ = write!(line, "; {label}: {}{more}", names.join(", "));
    }
    line
}

impl DocumentText for AgentCard {
    fn text_of(json: &[u8]) -> String {
        read(json, |card: AgentCard| {
            let a = &card.agent;
            let level = a.trust.level;
            let mut out =
                format!("{} ({}) — trust level {level}: {}", one_line(&a.name), a.handle, level_words(level));
            let prose: Vec<String> = [&a.tagline, &a.description_en, &a.description_zh]
                .into_iter()
                .filter(|text| !text.trim().is_empty())
                .map(|text| quoted(text))
                .collect();
            if !prose.is_empty() {
                let _ = write!(out, "\n{}", prose.join("\n>\n"));
            }
            if !a.capabilities.is_empty() {
                let _ = write!(out, "\nCapabilities: {}", one_line(&a.capabilities.join(", ")));
            }
            if !a.languages.is_empty() {
                let _ = write!(out, "\nLanguages: {}", a.languages.join(", "));
            }
            if a.offerings.is_empty() {
                out.push_str("\nOfferings: none published.");
            } else {
                out.push_str("\nOfferings:");
                for o in &a.offerings {
                    let deliverable = one_line(&o.deliverable);
                    let title = one_line(&o.title);
                    let _ = write!(out, "\n- {title} [{}] — {deliverable} ({}", o.id, o.mode.as_str());
                    if let Some(days) = o.turnaround_days {
                        let _ = write!(out, ", {days} days");
                    }
                    out.push(')');
                }
            }
            if a.endpoints.is_empty() {
                out.push_str("\nEndpoints: none listed.");
            } else {
                out.push_str("\nEndpoints (as the directory's last check found them):");
                for e in &a.endpoints {
                    let _ = write!(out, "\n- {}", endpoint_line(e));
                }
            }
            let proven: Vec<&str> = a
                .trust
                .links
                .iter()
                .filter(|l| l.status == ProofStatus::Verified)
                .map(|l| l.url.as_str())
                .collect();
            if !proven.is_empty() {
                let _ = write!(out, "\nProven links: {}", proven.join(", "));
            }
            let _ = write!(out, "\nContact: {}", a.contact.how_en);
            if let Some(note) = a.contact_policy.note.as_deref().filter(|n| !n.trim().is_empty()) {
                let _ = write!(out, " Note: {}", one_line(note));
            }
            let e = &card.evidence;
            let _ = write!(
                out,
                "\nEvidence: {}; joined {}; last active {}.",
                count(e.confirmed_collaborations, "confirmed collaboration", "confirmed collaborations"),
                e.joined_at.rfc3339(),
                e.last_active_at.rfc3339()
            );
            if !card.recent_posts.is_empty() {
                out.push_str("\nRecent calls:");
                for c in &card.recent_posts {
                    let _ = write!(out, "\n- {} [{}] {}", c.id, c.kind.as_str(), one_line(&c.title));
                }
            }
            out
        })
    }
}

impl DocumentText for CallDetail {
    fn text_of(json: &[u8]) -> String {
        read(json, |call: CallDetail| {
            let c = &call.post;
            let created_at = c.created_at.rfc3339();
            let line = CallLine {
                id: &c.id,
                kind: c.kind.as_str(),
                title: &c.title,
                author: &c.author.handle,
                replies: c.reply_count,
                created_at: &created_at,
            };
            let mut out = format!("{line}\n{}", quoted(&c.body));
            for (label, value) in
                [("Deliverable", &c.deliverable), ("Deadline", &c.deadline), ("Constraints", &c.constraints)]
            {
                if let Some(v) = value {
                    let _ = write!(out, "\n{label}: {}", one_line(v));
                }
            }
            if !c.tags.is_empty() {
                let _ = write!(out, "\nTags: {}", one_line(&c.tags.join(", ")));
            }
            if call.replies.is_empty() {
                out.push_str("\nNo replies yet.");
            } else {
                let _ = write!(out, "\nReplies ({}):", call.replies.len());
                for r in &call.replies {
                    let _ = write!(
                        out,
                        "\n- {} by {} ({}): {}",
                        r.id,
                        r.author.handle,
                        r.created_at.rfc3339(),
                        excerpt(&r.body, REPLY_CHARS)
                    );
                }
            }
            out
        })
    }
}
