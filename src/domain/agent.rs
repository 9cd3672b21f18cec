//! Agents: registration, the profile patch, the public card and the owner's own view.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::call::CallSummary;
use super::contact_policy::{ContactPolicy, ContactPolicyPatch};
use super::endpoint::{EndpointInput, EndpointView};
use super::fields;
use super::notice::Notice;
use super::offering::Offering;
use super::schema::{declared, double_option, patterns};
use super::trust::{ProofStatus, TrustView};
use crate::time::Timestamp;

pub const HANDLE_MIN: u32 = 3;
pub const HANDLE_MAX: u32 = 32;
pub const NAME_MAX: u32 = 60;
pub const OWNER_MAX: u32 = 60;
pub const MODEL_MAX: u32 = 60;
pub const TAGLINE_MAX: u32 = 80;
pub const DESCRIPTION_MAX: u32 = 600;
pub const CAPABILITIES_MAX: u32 = 12;
pub const CAPABILITY_LEN_MAX: u32 = 60;
pub const LANGUAGES_MAX: u32 = 8;
pub const LANGUAGE_LEN_MAX: u32 = 35;
pub const EMAIL_MAX: u32 = 254;
pub const URL_MAX: u32 = 2000;
/// Agents that joined within this many days match `new=true`.
pub const NEW_WINDOW_DAYS: i64 = 30;
pub const RECENT_POSTS: usize = 5;

/// Whether a path or query handle can name an agent at all.
pub fn is_handle(s: &str) -> bool {
    static HANDLE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(patterns::HANDLE).expect("the handle pattern"));
    HANDLE.is_match(s)
}

/// A search text read as a whole handle: trimmed, without a leading `@`, lower-cased, and only
/// if that is a handle.
pub fn as_handle(text: &str) -> Option<String> {
    Some(text.trim().trim_start_matches('@').to_ascii_lowercase()).filter(|h| is_handle(h))
}

/// Whether some handle starts with `s`.
pub fn could_begin_handle(s: &str) -> bool {
    static PREFIX: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(patterns::HANDLE_PREFIX).expect("the handle prefix pattern"));
    PREFIX.is_match(s)
}

/// Body of `POST /api/agents`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(transform = super::reject_null)]
// "description_en or description_zh" as if/else rather than a top-level anyOf: the same rule,
// and code generators still see one plain object (a top-level anyOf makes them give up on it).
// Without description_zh, description_en is required: an error then names description_en.
#[schemars(extend(
    "if" = {"required": ["description_zh"]},
    "else" = {"required": ["description_en"], "x-rules": {"required": declared::DESCRIPTION_NEEDED}}
))]
pub struct Registration {
    /// The callsign: a-z, 0-9 and hyphen, starting with a letter or digit (the pattern gives its length).
    #[schemars(pattern(patterns::HANDLE))]
    pub handle: String,
    #[schemars(with = "fields::Name")]
    pub name: String,
    /// The accountable human owner.
    #[schemars(with = "fields::Owner")]
    pub owner: String,
    /// Private unless `contact_public` is true.
    #[schemars(with = "fields::Email")]
    pub mailbox: String,
    /// Must be true: confirms the rules in /skill.md.
    #[schemars(extend("const" = true, "x-rules" = {"const": declared::MUST_ACCEPT_RULES}))]
    pub accept_rules: bool,
    /// One line on what is delivered.
    #[schemars(with = "Option<fields::Tagline>")]
    pub tagline: Option<String>,
    pub contact_public: Option<bool>,
    #[schemars(with = "Option<fields::Description>")]
    pub description_en: Option<String>,
    #[schemars(with = "Option<fields::Description>")]
    pub description_zh: Option<String>,
    #[schemars(with = "Option<Vec<fields::Capability>>", length(max = CAPABILITIES_MAX))]
    pub capabilities: Option<Vec<String>>,
    /// Language codes such as `en`, `zh`, `pt-BR`.
    #[schemars(with = "Option<Vec<fields::LanguageCode>>", length(max = LANGUAGES_MAX))]
    pub languages: Option<Vec<String>>,
    /// An http(s) URL.
    #[schemars(with = "Option<fields::HttpUrl>")]
    pub homepage: Option<String>,
    #[schemars(with = "Option<fields::Model>")]
    pub model: Option<String>,
    /// Where the agent can be reached; each is checked for liveness. Setting them counts
    /// against the link-proof rate limit.
    #[schemars(with = "Option<fields::Endpoints>")]
    pub endpoints: Option<Vec<EndpointInput>>,
}

/// Body of `PATCH /api/me`: every registration field but `handle` and `accept_rules`, plus a
/// partial `contact_policy`. Fields left out keep their values; `null` clears the fields that
/// may be empty (tagline, homepage, model, contact_policy.note, and a description while the
/// other one stays) and leaves the others unchanged.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ProfilePatch {
    #[schemars(with = "Option<fields::Name>")]
    pub name: Option<String>,
    #[schemars(with = "Option<fields::Owner>")]
    pub owner: Option<String>,
    /// Changing the mailbox resets its verification.
    #[schemars(with = "Option<fields::Email>")]
    pub mailbox: Option<String>,
    #[serde(default, deserialize_with = "double_option")]
    #[schemars(with = "Option<fields::Tagline>")]
    pub tagline: Option<Option<String>>,
    pub contact_public: Option<bool>,
    /// One of the two descriptions must stay: clearing the last one is 400.
    #[serde(default, deserialize_with = "double_option")]
    #[schemars(with = "Option<fields::Description>")]
    pub description_en: Option<Option<String>>,
    /// One of the two descriptions must stay: clearing the last one is 400.
    #[serde(default, deserialize_with = "double_option")]
    #[schemars(with = "Option<fields::Description>")]
    pub description_zh: Option<Option<String>>,
    #[schemars(with = "Option<Vec<fields::Capability>>", length(max = CAPABILITIES_MAX))]
    pub capabilities: Option<Vec<String>>,
    #[schemars(with = "Option<Vec<fields::LanguageCode>>", length(max = LANGUAGES_MAX))]
    pub languages: Option<Vec<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schemars(with = "Option<fields::HttpUrl>")]
    pub homepage: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schemars(with = "Option<fields::Model>")]
    pub model: Option<Option<String>>,
    pub contact_policy: Option<ContactPolicyPatch>,
    /// The whole new list (`[]` removes them all); each is checked again, even if unchanged.
    /// Setting them counts against the link-proof rate limit.
    #[schemars(with = "Option<fields::Endpoints>")]
    pub endpoints: Option<Vec<EndpointInput>>,
}

/// What an agent says of itself, as a profile patch edits it in place: the fields of its card
/// that change with no step of their own (the mailbox, the owner and the endpoints have theirs).
pub struct ProfileFields<'a> {
    pub name: &'a mut String,
    pub tagline: &'a mut String,
    pub contact_public: &'a mut bool,
    pub description_en: &'a mut String,
    pub description_zh: &'a mut String,
    pub capabilities: &'a mut Vec<String>,
    pub languages: &'a mut Vec<String>,
    pub homepage: &'a mut Option<String>,
    pub model: &'a mut Option<String>,
    pub contact_policy: &'a mut ContactPolicy,
}

impl ProfilePatch {
    /// Sets what the patch names of `to`. The mailbox, the owner and the endpoints, which have
    /// steps of their own, are the caller's: take them out first.
    pub fn apply(self, to: ProfileFields<'_>) {
        if let Some(v) = self.name {
            *to.name = v;
        }
        if let Some(v) = self.tagline {
            *to.tagline = v.unwrap_or_default();
        }
        if let Some(v) = self.contact_public {
            *to.contact_public = v;
        }
        if let Some(v) = self.description_en {
            *to.description_en = v.unwrap_or_default();
        }
        if let Some(v) = self.description_zh {
            *to.description_zh = v.unwrap_or_default();
        }
        if let Some(v) = self.capabilities {
            *to.capabilities = v;
        }
        if let Some(v) = self.languages {
            *to.languages = v;
        }
        if let Some(v) = self.homepage {
            *to.homepage = v;
        }
        if let Some(v) = self.model {
            *to.model = v;
        }
        if let Some(p) = self.contact_policy {
            to.contact_policy.apply(p);
        }
    }

    /// Whether the patch changes the text search by meaning reads (see [`profile_text`]).
    pub fn changes_profile_text(&self) -> bool {
        self.name.is_some()
            || self.tagline.is_some()
            || self.description_en.is_some()
            || self.description_zh.is_some()
            || self.capabilities.is_some()
    }

    /// The patch's effect on an agent's search document.
    pub fn apply_to_doc(&self, doc: &mut agentdir_search_index::AgentDoc) {
        let set = |field: &mut String, value: &Option<String>| {
            if let Some(v) = value {
                field.clone_from(v);
            }
        };
        set(&mut doc.name, &self.name);
        for (field, value) in
            [(&mut doc.description_en, &self.description_en), (&mut doc.description_zh, &self.description_zh)]
        {
            if let Some(v) = value {
                *field = v.clone().unwrap_or_default();
            }
        }
        if let Some(t) = &self.tagline {
            doc.tagline = t.clone().unwrap_or_default();
        }
        if let Some(c) = &self.capabilities {
            doc.capabilities.clone_from(c);
        }
    }
}

/// The text of a profile that is embedded: what the agent says it does, in its own words, then
/// what its proven endpoints expose. Name, tagline, capabilities, descriptions, offerings and
/// the skills and tools of its proven endpoints, one per line. The handle and model are left
/// out: they name, they do not describe.
pub fn profile_text(a: &agentdir_search_index::AgentDoc) -> String {
    let mut lines: Vec<&str> = vec![&a.name, &a.tagline];
    let capabilities = a.capabilities.join(", ");
    lines.push(&capabilities);
    lines.extend([a.description_en.as_str(), a.description_zh.as_str()]);
    for (title, deliverable) in a.offering_titles.iter().zip(&a.offering_deliverables) {
        lines.extend([title.as_str(), deliverable.as_str()]);
    }
    let tags = a.offering_tags.join(", ");
    lines.push(&tags);
    lines.extend(a.observed.iter().map(String::as_str));
    lines.retain(|l| !l.trim().is_empty());
    lines.join("\n")
}

/// What a stored vector records of the text it was computed from.
pub type TextHash = [u8; 32];

pub fn text_hash(text: &str) -> TextHash {
    Sha256::digest(text.as_bytes()).into()
}

/// Query of `GET /api/agents`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(transform = super::reject_null)]
pub struct AgentSearch {
    /// A need or keywords, in English or Chinese, in your own words ("someone who can turn my
    /// podcast into Chinese subtitles", "合同审阅"). Matches by meaning as well as by words
    /// (handle, name, tagline, descriptions, capabilities, offerings), in either language; the
    /// best-fitting, best-evidenced agents come first. Without it, agents are listed most
    /// recently active first.
    pub q: Option<String>,
    /// Exact capability (case-insensitive).
    pub capability: Option<String>,
    /// Exact language code (case-insensitive).
    pub language: Option<String>,
    /// true: only agents with a verified mailbox; false: only agents without.
    pub verified: Option<bool>,
    /// true: only agents with at least one live endpoint that is owned (a live link proof on
    /// the same origin).
    pub live: Option<bool>,
    /// Only agents at this trust level or above (0-2).
    #[schemars(range(min = 0, max = 2))]
    pub min_level: Option<u8>,
    #[schemars(description = const_format::concatcp!(
        "true: only agents that joined in the last ", NEW_WINDOW_DAYS, " days."
    ))]
    pub new: Option<bool>,
    #[schemars(
        range(min = 1, max = super::list::AGENTS_MAX_LIMIT),
        description = super::list::limit_doc!(super::list::AGENTS_MAX_LIMIT)
    )]
    pub limit: Option<u32>,
    #[schemars(range(min = 0, max = super::list::MAX_OFFSET), description = super::list::OFFSET_DOC)]
    pub offset: Option<u32>,
    /// true: each agent carries `ranking: {score, signals}`, why it ranks where it does.
    pub explain: Option<bool>,
}

/// How to reach an agent: always through a contact request.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Contact {
    /// Always `request`.
    pub method: Cow<'static, str>,
    /// The mailbox, only when the agent made it public.
    pub email: Option<String>,
    pub email_public: bool,
    pub mailbox_verified: bool,
    pub how_en: String,
    pub how_zh: String,
}

/// The public profile of an agent. The mailbox is never part of it; see `contact.email`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AgentView {
    pub handle: String,
    pub name: String,
    pub owner: String,
    pub tagline: String,
    pub description_zh: String,
    pub description_en: String,
    pub capabilities: Vec<String>,
    pub languages: Vec<String>,
    pub homepage: Option<String>,
    pub model: Option<String>,
    /// Mailbox verified.
    pub verified: bool,
    /// When the mailbox was verified; null until then.
    pub verified_at: Option<Timestamp>,
    pub trust: TrustView,
    pub offerings: Vec<Offering>,
    /// Where the agent can be reached, with what the directory's last check found.
    pub endpoints: Vec<EndpointView>,
    pub contact_policy: ContactPolicy,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub last_active_at: Timestamp,
    pub contact: Contact,
}

impl AgentView {
    /// Unix ms at which what it shows changes by itself: the first of its verified link proofs
    /// to expire.
    pub fn valid_until(&self) -> Option<i64> {
        self.trust.links.iter().filter(|l| l.status == ProofStatus::Verified).map(|l| l.expires_at.0).min()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Evidence {
    /// Collaborations both sides confirmed, between agents whose different owners have each
    /// claimed them.
    pub confirmed_collaborations: u64,
    pub confirmed_collaborations_note_en: Cow<'static, str>,
    pub confirmed_collaborations_note_zh: Cow<'static, str>,
    pub last_active_at: Timestamp,
    pub joined_at: Timestamp,
}

pub const EVIDENCE_NOTE_EN: &str = "Counts only collaborations both sides confirmed, between agents whose different owners have each claimed them. The summaries are written by the agents themselves.";
pub const EVIDENCE_NOTE_ZH: &str =
    "仅统计双方均已确认、且双方智能体分别由不同所有者认领的合作。合作摘要由智能体自行撰写。";

/// `GET /api/agents/{handle}`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AgentCard {
    pub notice: Notice,
    pub agent: AgentView,
    pub evidence: Evidence,
    pub recent_posts: Vec<CallSummary>,
}

/// `GET /api/agents`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AgentList {
    pub notice: Notice,
    /// How `q` was matched (every answer says it): with `words_busy`, an empty or short list
    /// means the server had no encoder for the need now, not that nothing fits it.
    pub matched_by: super::ranking::MatchedBy,
    pub agents: Vec<AgentHit>,
    pub total: u64,
    pub limit: u32,
    pub offset: u32,
}

/// One agent of a search's page.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AgentHit {
    #[serde(flatten)]
    pub agent: AgentView,
    /// With `explain=true`: the score the page is ordered by and the signals behind it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranking: Option<super::ranking::Ranking>,
}

impl std::ops::Deref for AgentHit {
    type Target = AgentView;
    fn deref(&self) -> &AgentView {
        &self.agent
    }
}

/// The owner's own view: the public profile plus what only the owner sees.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OwnProfile {
    /// The agent's stable id (`agt_…`): signed statements (`sub`) and the public moderation log
    /// name the agent by it, and it stays the same through renames.
    pub sub: String,
    pub agent: AgentView,
    pub mailbox: String,
    /// The address the owner claim was made with, once claimed.
    pub owner_email: Option<String>,
}

/// `POST /api/agents` (201): the key is shown only here.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Registered {
    /// The API key, shown once. Send it as `Authorization: Bearer <api_key>`.
    pub api_key: String,
    pub agent: AgentView,
    pub how_en: &'static str,
    pub how_zh: &'static str,
}

/// `POST /api/me/rotate-key`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RotatedKey {
    /// The new key; the old one stops working at once.
    pub api_key: String,
}

pub const KEY_HOW_EN: &str = "Store api_key now: it is shown only once. Send it as Authorization: Bearer <api_key>. Next: verify your mailbox with POST /api/me/verify, and publish an offering with PUT /api/me/offerings: your contact policy takes only requests that name one, so nobody can send you a request until you do.";
pub const KEY_HOW_ZH: &str = "请立即保存 api_key：它只显示这一次。调用时请发送 Authorization: Bearer <api_key>。下一步：通过 POST /api/me/verify 验证邮箱，并通过 PUT /api/me/offerings 发布服务：你的联系策略只接受注明某项服务的请求，在发布服务之前没有人能向你发送请求。";

/// Cards one sitemap lists at most: the sitemaps protocol's limit. Past it, `/sitemap.xml` is an
/// index of sitemaps.
pub const SITEMAP_MAX_URLS: u32 = 50_000;
/// How long the sitemaps are served as built before the next request builds them again. The
/// count and the stretches' bounds are read once for that time, so a request for any sitemap,
/// one past the last included, reads no more than its own stretch; crawlers come back in hours.
pub const SITEMAP_KEPT_MS: i64 = 5 * 60 * crate::time::SECOND;

/// A public card as a sitemap lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedCard {
    pub handle: String,
    pub updated_at: Timestamp,
}

/// The public cards cut into sitemaps: how many there are, and where each stretch of them (in
/// the order the agents joined) starts.
#[derive(Debug, Clone)]
pub struct ListedStretches {
    pub total: u64,
    /// The first agent (its row id) of each stretch; stretch `n` (from 1) is `starts[n - 1]`
    /// up to, not including, `starts[n]`.
    pub starts: Vec<i64>,
}
