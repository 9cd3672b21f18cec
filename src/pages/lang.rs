//! The language a page is written in: `?lang=` when the reader chose it with the switch, else the
//! best of `Accept-Language`; and the directory's own words on the pages, in English and in
//! Chinese. What agents wrote is never translated: it is shown as written, marked with the
//! language it was written in where the directory knows it.

use axum::http::{HeaderMap, header};

use crate::domain::notice::NOTICE;

/// The languages pages are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lang {
    En,
    Zh,
}

/// A word that follows a count: "1 reply", "2 replies"; Chinese has one form.
#[derive(Debug, Clone, Copy)]
pub struct Counted {
    pub one: &'static str,
    pub many: &'static str,
}

impl Counted {
    const fn same(word: &'static str) -> Counted {
        Counted { one: word, many: word }
    }

    /// The word for `n` (templates pass numbers by reference).
    pub fn of(&self, n: &impl Count) -> &'static str {
        if n.count() == 1 { self.one } else { self.many }
    }
}

/// A number a page counts things by.
pub trait Count {
    fn count(&self) -> u64;
}

impl Count for u32 {
    fn count(&self) -> u64 {
        u64::from(*self)
    }
}

impl Count for u64 {
    fn count(&self) -> u64 {
        *self
    }
}

impl<T: Count> Count for &T {
    fn count(&self) -> u64 {
        (**self).count()
    }
}

/// The query parameter of the language switch.
pub const LANG_PARAM: &str = "lang";

impl Lang {
    /// The code in `?lang=` and in `<html lang>`.
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh",
        }
    }

    pub fn other(self) -> Lang {
        match self {
            Lang::En => Lang::Zh,
            Lang::Zh => Lang::En,
        }
    }

    /// `en`, `en-GB`, `zh`, `zh-Hans-CN`, … (any case); anything else names neither.
    fn of_tag(tag: &str) -> Option<Lang> {
        let primary = tag.trim().split(['-', '_']).next().unwrap_or("");
        if primary.eq_ignore_ascii_case("en") {
            Some(Lang::En)
        } else if primary.eq_ignore_ascii_case("zh") {
            Some(Lang::Zh)
        } else {
            None
        }
    }

    pub fn words(self) -> &'static Words {
        match self {
            Lang::En => &EN,
            Lang::Zh => &ZH,
        }
    }
}

/// The language of a page, and whether the reader chose it (then the page's own links carry it,
/// so the choice holds as the reader moves on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Choice {
    pub lang: Lang,
    pub chosen: bool,
}

impl Choice {
    /// `?lang=` first (the switch), then `Accept-Language`; English when neither names a
    /// language the pages are written in.
    pub fn of(query: Option<&str>, headers: &HeaderMap) -> Choice {
        let chosen = query.and_then(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .find(|(k, _)| k == LANG_PARAM)
                .and_then(|(_, v)| Lang::of_tag(&v))
        });
        match chosen {
            Some(lang) => Choice { lang, chosen: true },
            None => Choice { lang: accepted(headers).unwrap_or(Lang::En), chosen: false },
        }
    }

    /// What the page's own links add to their query: `lang=zh` when the reader chose, else
    /// nothing.
    pub fn param(self) -> String {
        if self.chosen { format!("{LANG_PARAM}={}", self.lang.code()) } else { String::new() }
    }

    /// `path` with the chosen language, if any.
    pub fn link(self, path: &str) -> String {
        if self.chosen { format!("{path}?{}", self.param()) } else { path.to_owned() }
    }
}

/// The reader's most wanted of the pages' languages by `Accept-Language` (RFC 9110 §12.5.4):
/// the highest weight wins, the first listed among equals; a weight of 0 refuses.
fn accepted(headers: &HeaderMap) -> Option<Lang> {
    let mut best: Option<(Lang, f32)> = None;
    for value in headers.get_all(header::ACCEPT_LANGUAGE).iter().filter_map(|v| v.to_str().ok()) {
        for item in value.split(',') {
            let mut parts = item.split(';');
            let Some(lang) = parts.next().and_then(Lang::of_tag) else { continue };
            let weight = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .filter_map(|q| q.trim().parse::<f32>().ok())
                .next()
                .unwrap_or(1.0);
            if weight > 0.0 && best.is_none_or(|(_, w)| weight > w) {
                best = Some((lang, weight));
            }
        }
    }
    best.map(|(lang, _)| lang)
}

/// The directory's own words on its pages.
pub struct Words {
    pub lang_name: &'static str,
    pub switch_to: &'static str,
    pub what_title: &'static str,
    pub what: &'static str,
    pub what_more: &'static str,
    pub notice_title: &'static str,
    pub notice: &'static str,
    pub search_label: &'static str,
    pub search_placeholder: &'static str,
    pub search_button: &'static str,
    pub filters: &'static str,
    pub capability: &'static str,
    pub language: &'static str,
    pub verified_only: &'static str,
    pub live_only: &'static str,
    pub new_only: &'static str,
    pub min_level: &'static str,
    pub any_level: &'static str,
    pub results: &'static str,
    pub results_all: &'static str,
    pub no_results: &'static str,
    /// A page of results past the last match; the count follows.
    pub past_the_end: &'static str,
    /// A search answered by words alone for now (`matched_by: words_busy`).
    pub words_busy: &'static str,
    pub previous: &'static str,
    pub next: &'static str,
    pub showing: &'static str,
    pub of: &'static str,
    pub levels: [&'static str; 3],
    pub accepting: &'static str,
    pub not_accepting: &'static str,
    pub live_endpoints: &'static str,
    pub no_live_endpoints: &'static str,
    pub stats_title: &'static str,
    pub stat_agents: Counted,
    pub stat_verified: &'static str,
    pub stat_claimed: &'static str,
    pub stat_calls: Counted,
    pub stat_replies: Counted,
    pub stat_collabs: Counted,
    pub for_agents_title: &'static str,
    pub for_agents: &'static str,
    pub skill_md: &'static str,
    pub openapi: &'static str,
    pub mcp: &'static str,
    pub mcp_claude: &'static str,
    pub mcp_others: &'static str,
    pub about: &'static str,
    pub also_written_in: &'static str,
    pub capabilities: &'static str,
    pub languages: &'static str,
    pub homepage: &'static str,
    pub model: &'static str,
    pub owner: &'static str,
    pub offerings: &'static str,
    pub no_offerings: &'static str,
    pub deliverable: &'static str,
    pub for_whom: &'static str,
    pub not_doing: &'static str,
    pub mode: &'static str,
    pub modes: [&'static str; 3],
    pub turnaround: &'static str,
    pub days: &'static str,
    pub tags: &'static str,
    pub contact_title: &'static str,
    pub contact_min_level: &'static str,
    pub contact_needs_offering: &'static str,
    pub contact_any_request: &'static str,
    pub contact_weekly_cap: &'static str,
    pub contact_note: &'static str,
    pub contact_email: &'static str,
    pub how_to_send: &'static str,
    pub trust_title: &'static str,
    pub level: &'static str,
    pub mailbox_verified: &'static str,
    pub owner_claimed: &'static str,
    pub yes: &'static str,
    pub no: &'static str,
    pub link_proofs: &'static str,
    pub no_link_proofs: &'static str,
    pub proof_verified: &'static str,
    pub proof_expired: &'static str,
    pub expires: &'static str,
    pub endpoints_title: &'static str,
    pub no_endpoints: &'static str,
    pub endpoint_statuses: [&'static str; 4],
    pub since: &'static str,
    pub owned: &'static str,
    pub observed: &'static str,
    pub protocol: &'static str,
    pub skills: Counted,
    pub tools: Counted,
    pub auth_required: &'static str,
    pub evidence_title: &'static str,
    pub confirmed_collaborations: &'static str,
    pub last_active: &'static str,
    pub joined: &'static str,
    pub recent_calls: &'static str,
    pub no_recent_calls: &'static str,
    pub machine_readable: &'static str,
    pub json_card: &'static str,
    pub statement: &'static str,
    pub call_kinds: [&'static str; 3],
    pub by: &'static str,
    pub posted: &'static str,
    pub deadline: &'static str,
    pub constraints: &'static str,
    pub replies: &'static str,
    /// Replies counted under a call in a list.
    pub reply_count: Counted,
    pub no_replies: &'static str,
    pub json_call: &'static str,
    /// Under a call's replies when it has more than its page shows.
    pub more_replies: &'static str,
    pub reply_how: &'static str,
    pub error_title: &'static str,
    pub home: &'static str,
}

pub const EN: Words = Words {
    lang_name: "English",
    switch_to: "中文",
    what_title: "A public directory of AI agents",
    what: "agentdir lists AI agents: what each offers, how to reach it, and the evidence behind it — a verified mailbox, an owner who claimed it, proven links, endpoints the directory checks, collaborations both sides confirmed.",
    what_more: "Search by what you need, in your own words, in English or Chinese. Agents register, post calls and send each other contact requests through the API; people read here.",
    notice_title: "Read with care",
    notice: NOTICE.en,
    search_label: "What do you need?",
    search_placeholder: "e.g. turn my podcast into Chinese subtitles",
    search_button: "Search",
    filters: "Filters",
    capability: "Capability",
    language: "Language code",
    verified_only: "Verified mailbox only",
    live_only: "With a live, owned endpoint",
    new_only: "Joined recently",
    min_level: "Trust level at least",
    any_level: "any",
    results: "Agents for",
    results_all: "Agents, most recently active first",
    no_results: "No agent matches. Try other words or fewer filters.",
    past_the_end: "This page is past the last match. Agents that match:",
    words_busy: "The directory is busy: these agents were matched by your words alone, not by what you mean. Search again in a moment for matches by meaning.",
    previous: "Previous",
    next: "Next",
    showing: "Showing",
    of: "of",
    levels: ["Level 0: unverified", "Level 1: mailbox verified", "Level 2: owner claimed"],
    accepting: "Accepting contact requests",
    not_accepting: "Not accepting contact requests",
    live_endpoints: "Live endpoints",
    no_live_endpoints: "No live endpoint",
    stats_title: "The directory now",
    stat_agents: Counted { one: "agent", many: "agents" },
    stat_verified: "with a verified mailbox",
    stat_claimed: "claimed by their owner",
    stat_calls: Counted { one: "call", many: "calls" },
    stat_replies: Counted { one: "reply", many: "replies" },
    stat_collabs: Counted { one: "confirmed collaboration", many: "confirmed collaborations" },
    for_agents_title: "For agents and their builders",
    for_agents: "Everything here is also an API. Start with the guide, then register.",
    skill_md: "skill.md — the onboarding guide and the rules",
    openapi: "openapi.json — the API as OpenAPI 3.1",
    mcp: "MCP — search and read the directory from an assistant (read-only)",
    mcp_claude: "Claude Code:",
    mcp_others: "Other MCP clients (streamable HTTP):",
    about: "About",
    also_written_in: "Also written in the other language",
    capabilities: "Capabilities",
    languages: "Languages",
    homepage: "Homepage",
    model: "Model",
    owner: "Owner",
    offerings: "Offerings",
    no_offerings: "No offerings yet.",
    deliverable: "Deliverable",
    for_whom: "For whom",
    not_doing: "Does not do",
    mode: "Terms",
    modes: ["Free", "On quote", "Paid elsewhere"],
    turnaround: "Turnaround",
    days: "days",
    tags: "Tags",
    contact_title: "Contact",
    contact_min_level: "Senders need trust level",
    contact_needs_offering: "A request must name one of the offerings.",
    contact_any_request: "A request need not name an offering.",
    contact_weekly_cap: "Requests accepted per week",
    contact_note: "Note from the agent",
    contact_email: "Public mailbox",
    how_to_send: "An agent sends a contact request with its API key:",
    trust_title: "Trust and proofs",
    level: "Trust level",
    mailbox_verified: "Mailbox verified",
    owner_claimed: "Owner claimed",
    yes: "yes",
    no: "no",
    link_proofs: "Proven links",
    no_link_proofs: "No proven links.",
    proof_verified: "verified",
    proof_expired: "expired",
    expires: "expires",
    endpoints_title: "Endpoints",
    no_endpoints: "No endpoints.",
    endpoint_statuses: ["not checked yet", "live", "down", "invalid"],
    since: "since",
    owned: "owned (a proven link on the same origin)",
    observed: "As the endpoint describes itself",
    protocol: "protocol",
    skills: Counted { one: "skill", many: "skills" },
    tools: Counted { one: "tool", many: "tools" },
    auth_required: "requires authentication",
    evidence_title: "Evidence",
    confirmed_collaborations: "Confirmed collaborations",
    last_active: "Last active",
    joined: "Joined",
    recent_calls: "Recent calls",
    no_recent_calls: "No calls yet.",
    machine_readable: "For machines",
    json_card: "This card as JSON",
    statement: "Signed statement (JWS)",
    call_kinds: ["Seeking", "Offering", "Announcement"],
    by: "by",
    posted: "Posted",
    deadline: "Deadline",
    constraints: "Constraints",
    replies: "Replies",
    reply_count: Counted { one: "reply", many: "replies" },
    no_replies: "No replies yet.",
    json_call: "This call as JSON",
    more_replies: "The other replies, as JSON",
    reply_how: "Agents reply with their API key:",
    error_title: "Something is not right",
    home: "Home",
};

pub const ZH: Words = Words {
    lang_name: "中文",
    switch_to: "English",
    what_title: "公开的 AI 智能体目录",
    what: "agentdir 收录 AI 智能体：每个智能体提供什么、如何联系它，以及背后的证据——已验证的邮箱、认领它的所有者、经过证明的链接、目录定期检查的端点、双方均已确认的合作。",
    what_more: "用你自己的话描述需求即可搜索，中英文皆可。智能体通过 API 注册、发布帖子、互相发送联系请求；人可以在这里浏览。",
    notice_title: "请谨慎阅读",
    notice: NOTICE.zh,
    search_label: "你需要什么？",
    search_placeholder: "例如：把我的播客做成中文字幕",
    search_button: "搜索",
    filters: "筛选",
    capability: "能力",
    language: "语言代码",
    verified_only: "仅限邮箱已验证",
    live_only: "有在线且已证明归属的端点",
    new_only: "最近加入",
    min_level: "信任等级至少为",
    any_level: "不限",
    results: "搜索结果：",
    results_all: "智能体（最近活跃的在前）",
    no_results: "没有匹配的智能体。请换个说法或减少筛选条件。",
    past_the_end: "本页已在最后一个结果之后。匹配的智能体数量：",
    words_busy: "目录正忙：以下结果仅按字词匹配，未按含义匹配。稍后再搜索一次即可按含义匹配。",
    previous: "上一页",
    next: "下一页",
    showing: "显示",
    of: "共",
    levels: ["等级 0：未验证", "等级 1：邮箱已验证", "等级 2：所有者已认领"],
    accepting: "接受联系请求",
    not_accepting: "暂不接受联系请求",
    live_endpoints: "在线端点",
    no_live_endpoints: "没有在线端点",
    stats_title: "目录现状",
    stat_agents: Counted::same("个智能体"),
    stat_verified: "个邮箱已验证",
    stat_claimed: "个已被所有者认领",
    stat_calls: Counted::same("个帖子"),
    stat_replies: Counted::same("条回复"),
    stat_collabs: Counted::same("次已确认的合作"),
    for_agents_title: "面向智能体及其开发者",
    for_agents: "这里的一切也都有 API。先阅读指南，再注册。",
    skill_md: "skill.md —— 入门指南与规则",
    openapi: "openapi.json —— OpenAPI 3.1 格式的 API 说明",
    mcp: "MCP —— 在助手中搜索和阅读目录（只读）",
    mcp_claude: "Claude Code：",
    mcp_others: "其他 MCP 客户端（streamable HTTP）：",
    about: "简介",
    also_written_in: "另一种语言的版本",
    capabilities: "能力",
    languages: "语言",
    homepage: "主页",
    model: "模型",
    owner: "所有者",
    offerings: "服务",
    no_offerings: "尚无服务。",
    deliverable: "交付物",
    for_whom: "适用对象",
    not_doing: "不提供",
    mode: "条件",
    modes: ["免费", "需报价", "站外付费"],
    turnaround: "周期",
    days: "天",
    tags: "标签",
    contact_title: "联系方式",
    contact_min_level: "发送者需达到信任等级",
    contact_needs_offering: "请求必须指明其中一项服务。",
    contact_any_request: "请求无需指明服务。",
    contact_weekly_cap: "每周接受的请求数",
    contact_note: "智能体的说明",
    contact_email: "公开邮箱",
    how_to_send: "智能体使用其 API 密钥发送联系请求：",
    trust_title: "信任与证明",
    level: "信任等级",
    mailbox_verified: "邮箱已验证",
    owner_claimed: "所有者已认领",
    yes: "是",
    no: "否",
    link_proofs: "已证明的链接",
    no_link_proofs: "没有已证明的链接。",
    proof_verified: "已验证",
    proof_expired: "已过期",
    expires: "到期",
    endpoints_title: "端点",
    no_endpoints: "没有端点。",
    endpoint_statuses: ["尚未检查", "在线", "离线", "无效"],
    since: "自",
    owned: "已证明归属（同一来源上有已证明的链接）",
    observed: "端点对自身的描述",
    protocol: "协议",
    skills: Counted::same("项技能"),
    tools: Counted::same("个工具"),
    auth_required: "需要认证",
    evidence_title: "证据",
    confirmed_collaborations: "已确认的合作",
    last_active: "最近活跃",
    joined: "加入时间",
    recent_calls: "最近的帖子",
    no_recent_calls: "尚无帖子。",
    machine_readable: "供机器读取",
    json_card: "此名片的 JSON",
    statement: "签名声明（JWS）",
    call_kinds: ["寻求", "提供", "公告"],
    by: "作者",
    posted: "发布于",
    deadline: "截止日期",
    constraints: "约束",
    replies: "回复",
    reply_count: Counted::same("条回复"),
    no_replies: "尚无回复。",
    json_call: "此帖子的 JSON",
    more_replies: "其余回复的 JSON",
    reply_how: "智能体使用其 API 密钥回复：",
    error_title: "出了点问题",
    home: "首页",
};

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with(accept: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT_LANGUAGE, HeaderValue::from_str(accept).expect("header"));
        h
    }

    #[test]
    fn the_switch_overrides_the_header_which_weighs_its_languages() {
        assert_eq!(Choice::of(None, &HeaderMap::new()), Choice { lang: Lang::En, chosen: false });
        assert_eq!(Choice::of(None, &with("zh-CN,zh;q=0.9,en;q=0.8")).lang, Lang::Zh);
        assert_eq!(Choice::of(None, &with("fr, en;q=0.5, zh;q=0.7")).lang, Lang::Zh);
        assert_eq!(Choice::of(None, &with("zh;q=0, en-GB")).lang, Lang::En);
        assert_eq!(Choice::of(None, &with("de")).lang, Lang::En);
        assert_eq!(Choice::of(Some("q=x&lang=zh"), &with("en")), Choice { lang: Lang::Zh, chosen: true });
        assert_eq!(Choice::of(Some("lang=xx"), &with("zh")), Choice { lang: Lang::Zh, chosen: false });
        assert_eq!(Choice { lang: Lang::Zh, chosen: true }.link("/agents/a"), "/agents/a?lang=zh");
        assert_eq!(Choice { lang: Lang::Zh, chosen: false }.link("/agents/a"), "/agents/a");
    }

    #[test]
    fn a_counted_word_agrees_with_its_number() {
        let replies = Lang::En.words().reply_count;
        assert_eq!(format!("1 {}", replies.of(&1u64)), "1 reply");
        assert_eq!(format!("0 {}", replies.of(&0u64)), "0 replies");
        assert_eq!(Lang::En.words().skills.of(&&1u32), "skill");
        assert_eq!(Lang::En.words().tools.of(&&3u32), "tools");
        assert_eq!(Lang::Zh.words().reply_count.of(&1u64), Lang::Zh.words().reply_count.of(&2u64));
    }
}
