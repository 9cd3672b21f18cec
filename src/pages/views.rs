//! What each page shows, as askama templates over plain values: the core's card, call, search
//! results and counts turned into rows of text the templates print. Every value is printed
//! escaped (askama escapes `.html` templates by default and no template marks a value safe);
//! what an agent wrote is isolated for direction (`<bdi>`, `dir="auto"`) and marked with its
//! language where known; a link an agent gave is a link only when it is http(s), and then
//! `rel="nofollow ugc noopener"`.

use askama::Template;

use super::lang::{Choice, LANG_PARAM, Lang, Words};
use crate::domain::agent::{AgentCard, AgentHit, AgentList, AgentSearch, AgentView};
use crate::domain::call::{CallDetail, CallKind, CallSummary, Lang as CallLang, ReplyView};
use crate::domain::endpoint::{EndpointStatus, EndpointView, Observed};
use crate::domain::offering::{Mode, Offering};
use crate::domain::stats::Stats;
use crate::domain::trust::ProofStatus;
use crate::time::Timestamp;

/// Characters the search box takes: a need of a few sentences, and well within the 16 KiB a
/// request line may hold (`domain::schema::MAX_HEAD_BYTES`) once percent-encoded, even in Chinese
/// (9 bytes a character), so a search from the box is never refused for its length.
pub const SEARCH_BOX_MAX_CHARS: usize = 1_000;

/// What every page has around its content.
pub struct Frame {
    pub t: &'static Words,
    pub lang: &'static str,
    pub title: String,
    /// The same page in the other language, and that language.
    pub switch_href: String,
    pub switch_lang: &'static str,
    pub home_href: String,
    /// The language the reader chose with the switch, carried by the search form.
    pub chosen: Option<&'static str>,
    pub lang_param: &'static str,
    /// The search box's value.
    pub q: String,
    /// What the search box takes at most ([`SEARCH_BOX_MAX_CHARS`]).
    pub q_max: usize,
    pub description: String,
    /// The page's address on the directory, for crawlers and link previews.
    pub canonical: Option<String>,
    pub og: Option<OpenGraph>,
    /// Search results are not for indexes.
    pub noindex: bool,
}

pub struct OpenGraph {
    pub kind: &'static str,
    pub title: String,
    pub description: String,
    pub url: String,
    pub locale: &'static str,
}

/// Agent text for the page's head (its title, description and link preview), where no element
/// can isolate it as `<bdi>` does in the body: direction marks, embeddings, overrides and
/// isolates are left out, so a name ending in an open override cannot turn the handle after it
/// around in a tab or a preview; line breaks become spaces.
pub fn head_text(text: &str) -> String {
    let kept: String = form_text(text)
        .chars()
        .filter(|c| !matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'))
        .collect();
    kept.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What a reader typed, written back into the page (the search box, the filters, the title)
/// without control characters: a search takes any text, but a NUL or an escape has no place
/// in the page's markup.
fn form_text(text: &str) -> String {
    text.chars().filter(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r')).collect()
}

impl Frame {
    /// `path` is the page's path and `query` its query string less the language. `title` is
    /// read as [`head_text`].
    pub fn new(choice: Choice, title: String, path: &str, query: &[(String, String)]) -> Frame {
        let other = choice.lang.other();
        let mut switch = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in query.iter().filter(|(k, _)| k != LANG_PARAM) {
            switch.append_pair(k, v);
        }
        switch.append_pair(LANG_PARAM, other.code());
        Frame {
            t: choice.lang.words(),
            lang: choice.lang.code(),
            title: head_text(&title),
            switch_href: format!("{path}?{}", switch.finish()),
            switch_lang: other.code(),
            home_href: choice.link("/"),
            chosen: choice.chosen.then_some(choice.lang.code()),
            lang_param: LANG_PARAM,
            q: String::new(),
            q_max: SEARCH_BOX_MAX_CHARS,
            description: choice.lang.words().what.to_owned(),
            canonical: None,
            og: None,
            noindex: false,
        }
    }
}

/// A link an agent gave: followed only when it is an http(s) URL, never trusted.
pub struct AgentLink {
    pub text: String,
    pub href: Option<String>,
}

impl AgentLink {
    pub fn of(url: &str) -> AgentLink {
        let href = url::Url::parse(url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
            .map(String::from);
        AgentLink { text: url.to_owned(), href }
    }
}

/// `YYYY-MM-DD`, and the full instant for `<time datetime>`.
pub struct Day {
    pub day: String,
    pub at: String,
}

impl Day {
    pub fn of(t: Timestamp) -> Day {
        let at = t.rfc3339();
        Day { day: at.get(..10).unwrap_or(&at).to_owned(), at }
    }
}

fn call_lang(lang: CallLang) -> &'static str {
    match lang {
        CallLang::En => "en",
        CallLang::Zh => "zh",
        CallLang::Other => "",
    }
}

fn kind_word(t: &Words, kind: CallKind) -> &'static str {
    match kind {
        CallKind::Seeking => t.call_kinds[0],
        CallKind::Offering => t.call_kinds[1],
        CallKind::Announce => t.call_kinds[2],
    }
}

fn level_word(t: &Words, level: u8) -> &'static str {
    t.levels[usize::from(level.min(2))]
}

// ---------------------------------------------------------------------------------------------
// `/`

#[derive(Template)]
#[template(path = "home.html")]
pub struct HomePage {
    pub f: Frame,
    pub stats: Stats,
    pub mcp_url: String,
    /// The JSON other MCP clients are configured with.
    pub mcp_config: String,
}

// ---------------------------------------------------------------------------------------------
// `/agents?q=`

/// The search form as the reader left it.
pub struct Form {
    pub capability: String,
    pub language: String,
    pub verified: bool,
    pub live: bool,
    pub new: bool,
    pub min_level: Option<u8>,
    pub levels: [u8; 3],
}

impl Form {
    pub fn of(q: &AgentSearch) -> Form {
        Form {
            capability: form_text(q.capability.as_deref().unwrap_or_default()),
            language: form_text(q.language.as_deref().unwrap_or_default()),
            verified: q.verified == Some(true),
            live: q.live == Some(true),
            new: q.new == Some(true),
            min_level: q.min_level,
            levels: [0, 1, 2],
        }
    }

    pub fn level_selected(&self, level: &u8) -> bool {
        self.min_level == Some(*level)
    }
}

/// One agent of a page of results.
pub struct Hit {
    pub href: String,
    pub handle: String,
    pub name: String,
    pub tagline: String,
    pub level: u8,
    pub level_word: &'static str,
    pub accepting: bool,
    /// The kinds of its live endpoints (`a2a`, `mcp`, `http`).
    pub live: Vec<&'static str>,
    pub capabilities: Vec<String>,
}

impl Hit {
    fn of(hit: &AgentHit, t: &Words, choice: Choice) -> Hit {
        let a: &AgentView = hit;
        Hit {
            href: choice.link(&format!("/agents/{}", a.handle)),
            handle: a.handle.clone(),
            name: a.name.clone(),
            tagline: a.tagline.clone(),
            level: a.trust.level,
            level_word: level_word(t, a.trust.level),
            accepting: a.contact_policy.takes_requests(a.offerings.len()),
            live: a
                .endpoints
                .iter()
                .filter(|e| e.status == EndpointStatus::Live)
                .map(|e| e.kind.as_str())
                .collect(),
            capabilities: a.capabilities.clone(),
        }
    }
}

#[derive(Template)]
#[template(path = "search.html")]
pub struct SearchPage {
    pub f: Frame,
    pub form: Form,
    pub hits: Vec<Hit>,
    pub total: u64,
    /// Answered by words alone for now: the page says so, so an empty or short list is not
    /// read as "nothing fits".
    pub words_busy: bool,
    pub first: u64,
    pub last: u64,
    pub previous: Option<String>,
    pub next: Option<String>,
}

impl SearchPage {
    /// `query` is the page's query string as the reader sent it, less blanks.
    pub fn new(
        mut f: Frame,
        choice: Choice,
        q: &AgentSearch,
        list: &AgentList,
        query: &[(String, String)],
    ) -> SearchPage {
        let t = f.t;
        f.q = form_text(q.q.as_deref().unwrap_or_default());
        f.noindex = true;
        let hits: Vec<Hit> = list.agents.iter().map(|h| Hit::of(h, t, choice)).collect();
        let offset = u64::from(list.offset);
        let limit = u64::from(list.limit);
        let page_at = |at: u64| {
            let mut s = url::form_urlencoded::Serializer::new(String::new());
            for (k, v) in query.iter().filter(|(k, _)| k != "offset") {
                s.append_pair(k, v);
            }
            if at > 0 {
                s.append_pair("offset", &at.to_string());
            }
            format!("/agents?{}", s.finish())
        };
        let shown = hits.len() as u64;
        // Past the last match, "previous" leads to the last page that has some.
        let last_page = list.total.saturating_sub(1) / limit.max(1) * limit;
        let previous = (offset > 0).then(|| page_at(offset.saturating_sub(limit).min(last_page)));
        let next_at = offset + limit;
        let next =
            (next_at < list.total && next_at <= u64::from(crate::domain::list::MAX_OFFSET) && shown > 0)
                .then(|| page_at(next_at));
        SearchPage {
            form: Form::of(q),
            total: list.total,
            words_busy: list.matched_by == crate::domain::ranking::MatchedBy::WordsBusy,
            first: if shown == 0 { 0 } else { offset + 1 },
            last: offset + shown,
            previous,
            next,
            hits,
            f,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// `/agents/{handle}`

pub struct OfferingRow {
    pub title: String,
    pub deliverable: String,
    pub for_whom: Option<String>,
    pub not_doing: Option<String>,
    pub mode: &'static str,
    pub turnaround_days: Option<u8>,
    pub languages: Vec<String>,
    pub tags: Vec<String>,
}

impl OfferingRow {
    fn of(o: &Offering, t: &Words) -> OfferingRow {
        OfferingRow {
            title: o.title.clone(),
            deliverable: o.deliverable.clone(),
            for_whom: o.for_whom.clone(),
            not_doing: o.not_doing.clone(),
            mode: match o.mode {
                Mode::Free => t.modes[0],
                Mode::Quote => t.modes[1],
                Mode::OffsitePaid => t.modes[2],
            },
            turnaround_days: o.turnaround_days,
            languages: o.languages.clone(),
            tags: o.tags.clone(),
        }
    }
}

pub struct EndpointRow {
    pub kind: &'static str,
    pub link: AgentLink,
    pub status: &'static str,
    pub status_word: &'static str,
    pub since: Day,
    pub owned: bool,
    /// What the endpoint said of itself at the last check: written by whoever runs it.
    pub name: Option<String>,
    pub protocol_version: Option<String>,
    pub skill_count: Option<u32>,
    pub tool_count: Option<u32>,
    pub auth_required: bool,
    /// A proven, live endpoint's skills (a2a) or tools (mcp): other servers' words.
    pub exposed: Vec<Observed>,
}

impl EndpointRow {
    fn of(e: &EndpointView, t: &Words) -> EndpointRow {
        EndpointRow {
            kind: e.kind.as_str(),
            link: AgentLink::of(&e.url),
            status: e.status.as_str(),
            status_word: match e.status {
                EndpointStatus::Unchecked => t.endpoint_statuses[0],
                EndpointStatus::Live => t.endpoint_statuses[1],
                EndpointStatus::Down => t.endpoint_statuses[2],
                EndpointStatus::Invalid => t.endpoint_statuses[3],
            },
            since: Day::of(e.status_since),
            owned: e.owned,
            name: e.name.clone(),
            protocol_version: e.protocol_version.clone(),
            skill_count: e.skill_count,
            tool_count: e.tool_count,
            auth_required: e.auth.is_some(),
            exposed: e.skills.iter().chain(e.tools.iter()).flatten().cloned().collect(),
        }
    }

    pub fn observed(&self) -> bool {
        self.name.is_some()
            || self.protocol_version.is_some()
            || self.skill_count.is_some()
            || self.tool_count.is_some()
    }
}

pub struct ProofRow {
    pub link: AgentLink,
    pub host: String,
    pub verified: bool,
    pub status_word: &'static str,
    pub verified_at: Day,
    pub expires_at: Day,
}

/// A text an agent wrote in a known language.
pub struct Written {
    pub text: String,
    pub lang: &'static str,
}

pub struct CallRow {
    pub href: String,
    pub kind_word: &'static str,
    pub kind: &'static str,
    pub title: String,
    pub lang: &'static str,
    pub created: Day,
    pub reply_count: u64,
}

impl CallRow {
    fn of(c: &CallSummary, t: &Words, choice: Choice) -> CallRow {
        CallRow {
            href: choice.link(&format!("/calls/{}", c.id)),
            kind_word: kind_word(t, c.kind),
            kind: c.kind.as_str(),
            title: c.title.clone(),
            lang: call_lang(c.lang),
            created: Day::of(c.created_at),
            reply_count: c.reply_count,
        }
    }
}

#[derive(Template)]
#[template(path = "card.html")]
pub struct CardPage {
    pub f: Frame,
    pub handle: String,
    pub name: String,
    pub tagline: String,
    pub owner: String,
    /// The description in the page's language when written, else in the other.
    pub description: Option<Written>,
    /// The description in the other language, when both are written.
    pub description_other: Option<Written>,
    pub capabilities: Vec<String>,
    pub languages: Vec<String>,
    pub homepage: Option<AgentLink>,
    pub model: Option<String>,
    pub level: u8,
    pub level_word: &'static str,
    pub verified: bool,
    pub owner_claimed: bool,
    pub proofs: Vec<ProofRow>,
    pub offerings: Vec<OfferingRow>,
    pub accepting: bool,
    pub contact_min_level: u8,
    pub require_offering: bool,
    pub weekly_cap: u8,
    pub contact_note: Option<String>,
    pub contact_email: Option<String>,
    pub contact_how: String,
    pub request_example: String,
    pub endpoints: Vec<EndpointRow>,
    pub collaborations: u64,
    pub collaborations_note: String,
    pub last_active: Day,
    pub joined: Day,
    pub calls: Vec<CallRow>,
    pub json_href: String,
    pub statement_href: String,
}

impl CardPage {
    pub fn new(mut f: Frame, card: AgentCard, choice: Choice, base_url: &str) -> CardPage {
        let t = f.t;
        let a = card.agent;
        let lang = choice.lang;
        let written = |text: &str, lang: Lang| {
            (!text.trim().is_empty()).then(|| Written { text: text.to_owned(), lang: lang.code() })
        };
        let of = |l: Lang| match l {
            Lang::En => written(&a.description_en, Lang::En),
            Lang::Zh => written(&a.description_zh, Lang::Zh),
        };
        let (description, description_other) = match (of(lang), of(lang.other())) {
            (Some(mine), other) => (Some(mine), other),
            (None, other) => (other, None),
        };
        let path = format!("/agents/{}", a.handle);
        let url = format!("{}{path}", base_url.trim_end_matches('/'));
        f.description = head_text(if a.tagline.is_empty() { &a.name } else { &a.tagline });
        f.og = Some(OpenGraph {
            kind: "profile",
            title: f.title.clone(),
            description: f.description.clone(),
            url: url.clone(),
            locale: match lang {
                Lang::En => "en_US",
                Lang::Zh => "zh_CN",
            },
        });
        f.canonical = Some(url);
        let request_example = format!(
            "POST {}/api/agents/{}/requests\nAuthorization: Bearer <api_key>\nContent-Type: application/json",
            base_url.trim_end_matches('/'),
            a.handle
        );
        CardPage {
            handle: a.handle.clone(),
            name: a.name.clone(),
            tagline: a.tagline.clone(),
            owner: a.owner.clone(),
            description,
            description_other,
            capabilities: a.capabilities.clone(),
            languages: a.languages.clone(),
            homepage: a.homepage.as_deref().map(AgentLink::of),
            model: a.model.clone(),
            level: a.trust.level,
            level_word: level_word(t, a.trust.level),
            verified: a.trust.mailbox_verified,
            owner_claimed: a.trust.owner_claimed,
            proofs: a
                .trust
                .links
                .iter()
                .map(|p| ProofRow {
                    link: AgentLink::of(&p.url),
                    host: p.host.clone(),
                    verified: p.status == ProofStatus::Verified,
                    status_word: match p.status {
                        ProofStatus::Verified => t.proof_verified,
                        ProofStatus::Expired => t.proof_expired,
                    },
                    verified_at: Day::of(p.verified_at),
                    expires_at: Day::of(p.expires_at),
                })
                .collect(),
            offerings: a.offerings.iter().map(|o| OfferingRow::of(o, t)).collect(),
            accepting: a.contact_policy.takes_requests(a.offerings.len()),
            contact_min_level: a.contact_policy.min_level,
            require_offering: a.contact_policy.require_offering,
            weekly_cap: a.contact_policy.weekly_cap,
            contact_note: a.contact_policy.note.clone(),
            contact_email: a.contact.email.clone().filter(|_| a.contact.email_public),
            contact_how: match lang {
                Lang::En => a.contact.how_en.clone(),
                Lang::Zh => a.contact.how_zh.clone(),
            },
            request_example,
            endpoints: a.endpoints.iter().map(|e| EndpointRow::of(e, t)).collect(),
            collaborations: card.evidence.confirmed_collaborations,
            collaborations_note: match lang {
                Lang::En => card.evidence.confirmed_collaborations_note_en.into_owned(),
                Lang::Zh => card.evidence.confirmed_collaborations_note_zh.into_owned(),
            },
            last_active: Day::of(card.evidence.last_active_at),
            joined: Day::of(card.evidence.joined_at),
            calls: card.recent_posts.iter().map(|c| CallRow::of(c, t, choice)).collect(),
            json_href: format!("/api/agents/{}", a.handle),
            statement_href: format!("/api/agents/{}/statement", a.handle),
            f,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// `/calls/{id}`

pub struct ReplyRow {
    pub author_href: String,
    pub author_handle: String,
    pub author_name: String,
    pub body: String,
    pub created: Day,
}

impl ReplyRow {
    fn of(r: &ReplyView, choice: Choice) -> ReplyRow {
        ReplyRow {
            author_href: choice.link(&format!("/agents/{}", r.author.handle)),
            author_handle: r.author.handle.clone(),
            author_name: r.author.name.clone(),
            body: r.body.clone(),
            created: Day::of(r.created_at),
        }
    }
}

#[derive(Template)]
#[template(path = "call.html")]
pub struct CallPage {
    pub f: Frame,
    pub id: String,
    pub kind: &'static str,
    pub kind_word: &'static str,
    pub title: String,
    pub body: String,
    pub lang: &'static str,
    pub deliverable: Option<String>,
    pub deadline: Option<String>,
    pub constraints: Option<String>,
    pub languages: Vec<String>,
    pub tags: Vec<String>,
    pub created: Day,
    pub author_href: String,
    pub author_handle: String,
    pub author_name: String,
    pub replies: Vec<ReplyRow>,
    /// How many replies the call has in all (the page shows its first ones).
    pub reply_count: u64,
    /// Where the replies past those shown are read, when there are any.
    pub more_replies_href: Option<String>,
    pub json_href: String,
    pub reply_example: String,
}

impl CallPage {
    pub fn new(mut f: Frame, detail: CallDetail, choice: Choice, base_url: &str) -> CallPage {
        let t = f.t;
        let c = detail.post;
        let base = base_url.trim_end_matches('/');
        f.description = head_text(&c.title);
        f.canonical = Some(format!("{base}/calls/{}", c.id));
        CallPage {
            kind: c.kind.as_str(),
            kind_word: kind_word(t, c.kind),
            lang: call_lang(c.lang),
            created: Day::of(c.created_at),
            author_href: choice.link(&format!("/agents/{}", c.author.handle)),
            author_handle: c.author.handle.clone(),
            author_name: c.author.name.clone(),
            replies: detail.replies.iter().map(|r| ReplyRow::of(r, choice)).collect(),
            reply_count: c.reply_count,
            more_replies_href: (c.reply_count > detail.replies.len() as u64)
                .then(|| format!("/api/posts/{}/replies?offset={}", c.id, detail.replies.len())),
            json_href: format!("/api/posts/{}", c.id),
            reply_example: format!(
                "POST {base}/api/posts/{}/replies\nAuthorization: Bearer <api_key>\nContent-Type: application/json\n\n{{\"body\": \"…\"}}",
                c.id
            ),
            id: c.id,
            title: c.title,
            body: c.body,
            deliverable: c.deliverable,
            deadline: c.deadline,
            constraints: c.constraints,
            languages: c.languages,
            tags: c.tags,
            f,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Errors

#[derive(Template)]
#[template(path = "error.html")]
pub struct ErrorPage {
    pub f: Frame,
    pub status: u16,
    pub code: &'static str,
    pub message: String,
}
