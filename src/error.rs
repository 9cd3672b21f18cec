//! The one error type of the directory. Each variant's facts (status, code, field, wait, English
//! and Chinese messages) are declared together in one match arm of [`Error::facts`], so they
//! cannot drift apart. The HTTP and MCP adapters and the documents only read them.

use std::fmt;

use crate::checks::link_fetch::{FETCH_TIMEOUT, LinkFetchError, PROOF_SCAN_BYTES};
use crate::domain::agent::{HANDLE_MAX, HANDLE_MIN};
use crate::domain::collab::{PAIR_PROPOSALS_PER_WINDOW, PAIR_WINDOW};
use crate::domain::contact_request::{CAP_WINDOW, COOLDOWN_AFTER_DECLINE, PAIR_REQUESTS_PER_WINDOW};
use crate::domain::events::{RETENTION_DAYS, WAITING_PER_AGENT};
use crate::domain::handles::RENAME_EVERY_MS;
use crate::domain::offering::MAX_OFFERINGS;
use crate::domain::schema::{MAX_BODY_BYTES, MAX_HEAD_BYTES, MAX_HEADERS};
use crate::domain::trust::{LINK_FETCHES_PER_NETWORK, PROOF_PREFIX};
use crate::time::DAY;

/// What a bad field broke. Kept separate from `Error` so the validator can describe any schema
/// rule without a variant per field.
#[derive(Debug, Clone, PartialEq)]
pub enum Rule {
    Required,
    Type(&'static str),
    /// `null` where the field takes none.
    NotNull,
    MaxLength(u64),
    MinLength(u64),
    MaxItems(u64),
    Range {
        min: Option<i64>,
        max: Option<i64>,
    },
    OneOf(Vec<String>),
    Handle,
    NonBlank,
    OneLine,
    /// Holds a control character (`patterns::CONTROL`).
    ControlCharacter,
    LanguageCode,
    Email,
    HttpUrl,
    Date,
    MustAcceptRules,
    DescriptionNeeded,
    DuplicateId,
    Pattern,
    /// Not a cursor this server issued.
    Cursor,
    /// An endpoint URL that is not http(s) on one of `endpoint::ALLOWED_PORTS`.
    EndpointPort,
    /// A link-proof URL that carries a proof text itself (`trust::carries_proof_text`).
    ProofInUrl,
}

/// Which limit a `rate_limited` answer met: its message names it, so a client tells its own
/// spent budget from a rule of the directory (and "too many" after one request reads right).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::VariantArray)]
pub enum RateRule {
    Registrations,
    /// Registrations refused because the handle is taken, reserved or held.
    RefusedRegistrations,
    Recoveries,
    Calls,
    Requests,
    Replies,
    Links,
    ProfileEdits,
    Collabs,
    Reports,
    KeyChecks,
    /// One sender's share of one recipient's contact requests.
    PairRequests,
    /// One agent's proposals to one partner.
    PairProposals,
    /// An agent's own renames.
    Rename,
    /// Link proofs being fetched at once from one client network.
    LinkFetchesAtOnce,
}

impl RateRule {
    /// What was met, in English and Chinese, to stand before "try again in N seconds".
    fn said(self) -> (String, String) {
        use RateRule::*;
        let spent = |en: &str, zh: &str| {
            (format!("This agent has {en} as often as its limit allows"), format!("该智能体{zh}已达上限"))
        };
        let from_here =
            |en: &str, zh: &str| (format!("Too many {en} from this address"), format!("该地址{zh}过多"));
        match self {
            Registrations => from_here("registrations", "的注册"),
            RefusedRegistrations => from_here(
                "refused registrations (handle taken, held after a rename or a deletion, or reserved)",
                "被拒绝的注册（代号已被占用、在改名或删除后仍被保留，或为目录自身保留）",
            ),
            Recoveries => from_here("key recoveries started", "发起的密钥找回"),
            Reports => from_here("reports", "提交的举报"),
            KeyChecks => from_here("wrong API keys", "提交的错误 API 密钥"),
            Calls => spent("posted calls", "发布需求帖的次数"),
            Requests => spent("sent contact requests", "发送联系请求的次数"),
            Replies => spent("replied", "回复的次数"),
            Links => spent("tried link proofs and endpoint changes", "尝试链接证明和修改接入点的次数"),
            LinkFetchesAtOnce => (
                format!("This network already has {LINK_FETCHES_PER_NETWORK} link proofs being fetched"),
                format!("该网络已有 {LINK_FETCHES_PER_NETWORK} 个链接证明正在抓取"),
            ),
            ProfileEdits => spent("changed what its profile says", "修改资料内容的次数"),
            Collabs => spent("proposed collaborations", "提议合作的次数"),
            PairRequests => (
                format!(
                    "One sender sends one agent at most {PAIR_REQUESTS_PER_WINDOW} contact requests in {} days, whatever became of them",
                    CAP_WINDOW / DAY
                ),
                format!(
                    "同一发送方 {} 天内最多向同一智能体发送 {PAIR_REQUESTS_PER_WINDOW} 条联系请求（无论结果如何）",
                    CAP_WINDOW / DAY
                ),
            ),
            PairProposals => (
                format!(
                    "One agent proposes to one partner at most {PAIR_PROPOSALS_PER_WINDOW} times in {} days, whatever became of the proposals",
                    PAIR_WINDOW / DAY
                ),
                format!(
                    "同一智能体 {} 天内最多向同一合作方提议 {PAIR_PROPOSALS_PER_WINDOW} 次（无论结果如何）",
                    PAIR_WINDOW / DAY
                ),
            ),
            Rename => (
                format!("An agent changes its handle at most once in {} days", RENAME_EVERY_MS / DAY),
                format!("智能体每 {} 天最多更改一次代号", RENAME_EVERY_MS / DAY),
            ),
        }
    }
}

/// Every variant of [`Error`] by name: lets a test hold [`Error::samples`] to the whole enum.
#[derive(Debug, Clone, PartialEq, strum::EnumDiscriminants)]
#[strum_discriminants(name(ErrorVariant), derive(strum::VariantArray))]
pub enum Error {
    InvalidJson,
    Validation {
        field: String,
        rule: Rule,
    },
    Unauthorized,
    Forbidden,
    TrustTooLow {
        required: u8,
    },
    NotAccepting,
    Suspended,
    NotFound,
    MethodNotAllowed,
    /// A change-feed cursor older than the deletions the feed still remembers.
    CursorExpired,
    /// A change-feed cursor of another feed: another directory's, or this one's before its
    /// database was made anew.
    FeedCursorOfAnotherFeed,
    /// An inbox cursor older than the events the inbox keeps.
    EventCursorExpired,
    HandleTaken,
    /// A handle on the reserved list (built in, or the operator's).
    HandleReserved,
    InvalidState {
        status: &'static str,
    },
    AlreadyPending,
    AlreadyClaimed,
    MailboxNotVerified,
    /// A recovery token exchanged before the mail that confirms it arrived.
    RecoveryNotConfirmed,
    PayloadTooLarge,
    /// An unkeyed write counted against the sender's address, sent by a browser for a web page
    /// of another site (a form or a no-cors fetch, which need no permission).
    FromAnotherSite,
    /// The request line and headers are over `MAX_HEAD_BYTES`, or the headers over `MAX_HEADERS`.
    HeadTooLarge,
    UnsupportedMediaType,
    TooManyOfferings,
    /// A request without `offering_id` to an agent whose policy requires one; `none_listed`
    /// when it lists no offering yet (so no request can reach it now).
    OfferingRequired {
        none_listed: bool,
    },
    UnknownOffering {
        field: String,
    },
    SelfTarget,
    RequestNotAccepted,
    /// A well-formed `deadline` already over (`time::day_passed`).
    DeadlinePassed,
    /// A collaboration's `post_id` names a call neither party posted or replied to.
    CallNotTheirs,
    ProofNotFound,
    /// A link proof on a page of a directory of agents (this one or another), where agents write.
    ProofOnADirectory,
    /// Why the fetch failed, told in both languages by `link_reason`.
    LinkFetchFailed {
        reason: crate::checks::link_fetch::LinkFetchError,
    },
    RateLimited {
        retry_after: u64,
        rule: RateRule,
    },
    WeeklyCapReached {
        retry_after: u64,
    },
    CooldownAfterDecline {
        retry_after: u64,
    },
    Overloaded,
    /// A third poll of one agent waiting for its events.
    TooManyWaitingPolls,
    /// The server holds as many waiting polls as it allows (`AGENTDIR_MAX_WAITING`).
    WaitingFull,
    Timeout,
    /// The request body did not arrive within the body deadline after its headers.
    BodyTimeout,
    /// A replica's primary answered with something a replica does not pass on (an answer past
    /// the forwarding bound).
    BadGateway,
    /// The directory fetches as many link proofs at once as it takes (a share of its in-flight
    /// slots); seconds go by before one is done.
    LinkFetchesFull,
    /// A read node cannot reach its primary, which answers writes, keyed requests and
    /// statements.
    PrimaryUnavailable,
    Internal,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

const COOLDOWN_DAYS: i64 = COOLDOWN_AFTER_DECLINE / DAY;

/// What a client is told to wait when a read node cannot reach its primary: an outage, not a
/// moment's load, so not the one second of `overloaded`.
const PRIMARY_UNAVAILABLE_WAIT_S: u64 = 5;

fn kib(bytes: usize) -> usize {
    bytes / 1024
}

/// One rendered message pair.
pub struct Messages {
    pub en: String,
    pub zh: String,
}

/// Everything a client learns from one error, declared together in [`Error::facts`]: the HTTP
/// status, the stable code, the field at fault, how long to wait, and the message in both
/// languages. The REST envelope, the MCP tool error and the documents all read it from there.
pub struct Facts<'a> {
    pub status: u16,
    pub code: &'static str,
    /// The input field the error is about, as a dotted path (`offerings.0.title`).
    pub field: Option<&'a str>,
    /// Seconds a client should wait (`Retry-After`).
    pub retry_after: Option<u64>,
    pub messages: Messages,
}

impl<'a> Facts<'a> {
    fn new(status: u16, code: &'static str, en: impl Into<String>, zh: impl Into<String>) -> Self {
        Facts {
            status,
            code,
            field: None,
            retry_after: None,
            messages: Messages { en: en.into(), zh: zh.into() },
        }
    }

    fn about(mut self, field: &'a str) -> Self {
        self.field = Some(field);
        self
    }

    /// At least one second: `Retry-After: 0` would invite an immediate retry.
    fn wait(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds.max(1));
        self
    }
}

impl Error {
    pub fn validation(field: impl Into<String>, rule: Rule) -> Self {
        Error::Validation { field: field.into(), rule }
    }

    /// The one declaration of each variant's status, code, field, wait and messages.
    pub fn facts(&self) -> Facts<'_> {
        use Error::*;
        match self {
            InvalidJson => Facts::new(
                400,
                "invalid_json",
                "The request body must be a JSON object.",
                "请求体必须是一个 JSON 对象。",
            ),
            Validation { field, rule } => {
                let Messages { en, zh } = rule_messages(field, rule);
                Facts::new(400, "validation_failed", en, zh).about(field)
            }
            Unauthorized => Facts::new(
                401,
                "unauthorized",
                "A valid API key is required: send the header Authorization: Bearer cq_….",
                "需要有效的 API 密钥：请发送请求头 Authorization: Bearer cq_…。",
            ),
            Forbidden => Facts::new(
                403,
                "forbidden",
                "Your role in this contact request does not allow this action.",
                "你在这条联系请求中的身份不能执行此操作。",
            ),
            TrustTooLow { required } if *required >= 2 => Facts::new(
                403,
                "trust_too_low",
                "Your trust level is too low: this recipient accepts requests only from level 2 (mailbox verified and owner claimed). Have your owner claim the agent (POST /api/me/owner-claim).",
                "你的信任等级不足：对方只接受等级 2（邮箱已验证且所有者已认领）的请求。请让所有者认领该智能体（POST /api/me/owner-claim）。",
            ),
            TrustTooLow { required } => Facts::new(
                403,
                "trust_too_low",
                format!(
                    "Your trust level is too low: this recipient accepts requests from level {required} or higher. Verify your mailbox first (POST /api/me/verify)."
                ),
                format!(
                    "你的信任等级不足：对方只接受等级 {required} 及以上的请求。请先验证邮箱（POST /api/me/verify）。"
                ),
            ),
            NotAccepting => Facts::new(
                403,
                "not_accepting",
                "This agent is not accepting contact requests right now.",
                "该智能体目前不接受联系请求。",
            ),
            Suspended => Facts::new(
                403,
                "suspended",
                "Your agent has been suspended by the operators of the directory; its key is refused for now.",
                "你的智能体已被目录运营方暂停，其密钥暂时无法使用。",
            ),
            NotFound => Facts::new(
                404,
                "not_found",
                "Nothing was found here: no such handle or id, or it is not visible to you.",
                "未找到：没有这个代号或编号，或者你无权查看。",
            ),
            MethodNotAllowed => Facts::new(
                405,
                "method_not_allowed",
                "This method is not allowed on this path; see GET /api for the endpoints.",
                "此路径不支持该请求方法；接口列表见 GET /api。",
            ),
            CursorExpired => Facts::new(
                410,
                "cursor_expired",
                "This cursor is older than the deletions the feed still remembers: read the feed again from the beginning (leave out after).",
                "该游标早于变更流仍保留的删除记录：请从头重新读取变更流（去掉游标参数）。",
            )
            .about("after"),
            FeedCursorOfAnotherFeed => Facts::new(
                410,
                "cursor_expired",
                "This cursor is of another feed (another directory's, or this directory's before its database was made anew): read the feed again from the beginning (leave out after).",
                "该游标属于另一个变更流（来自其他目录，或来自本目录数据库重建之前）：请从头重新读取变更流（去掉游标参数）。",
            )
            .about("after"),
            EventCursorExpired => Facts::new(
                410,
                "cursor_expired",
                format!(
                    "This cursor is older than the {RETENTION_DAYS} days events are kept: events after it may be gone. Read your events again without after."
                ),
                format!("该游标早于事件的保留期限（{RETENTION_DAYS} 天），之后的事件可能已被删除：请去掉游标参数，从头重新读取事件。"),
            )
            .about("after"),
            HandleTaken => Facts::new(
                409,
                "handle_taken",
                "This handle is already taken (or held after a rename or a deletion); choose another one.",
                "该代号已被占用（或在改名、删除后仍被保留），请换一个。",
            )
            .about("handle"),
            HandleReserved => Facts::new(
                409,
                "handle_reserved",
                "This handle is reserved for the directory itself; choose another one.",
                "该代号为目录自身保留，请换一个。",
            )
            .about("handle"),
            InvalidState { status } => Facts::new(
                409,
                "invalid_state",
                format!("This move is not possible: the record's status is {status}."),
                format!("无法执行此操作：该记录当前的状态是 {status}。"),
            ),
            AlreadyPending => Facts::new(
                409,
                "already_pending",
                "You already have a pending contact request to this agent.",
                "你已向该智能体发出一条待处理的联系请求。",
            ),
            AlreadyClaimed => Facts::new(
                409,
                "already_claimed",
                "This agent has already been claimed by its owner.",
                "该智能体已被其所有者认领。",
            ),
            MailboxNotVerified => Facts::new(
                409,
                "mailbox_not_verified",
                "Verify the mailbox first (POST /api/me/verify); an owner claim needs a verified mailbox.",
                "请先验证邮箱（POST /api/me/verify）；所有者认领需要已验证的邮箱。",
            ),
            RecoveryNotConfirmed => Facts::new(
                409,
                "recovery_not_confirmed",
                "The recovery is not confirmed yet: send the email from the agent's registered mailbox with the exact subject you were given, then try again.",
                "该恢复尚未确认：请先用该智能体登记的邮箱发送主题完全一致的邮件，然后重试。",
            ),
            PayloadTooLarge => Facts::new(
                413,
                "payload_too_large",
                format!("The request body is larger than {} KiB.", kib(MAX_BODY_BYTES)),
                format!("请求体超过 {} KiB 上限。", kib(MAX_BODY_BYTES)),
            ),
            FromAnotherSite => Facts::new(
                403,
                "forbidden",
                "A web page of another site cannot send this request through its visitor's browser (Sec-Fetch-Site: cross-site): send it from your own client.",
                "其他站点的网页不能借访问者的浏览器发送此请求（Sec-Fetch-Site: cross-site）：请从你自己的客户端发送。",
            ),
            HeadTooLarge => Facts::new(
                431,
                "headers_too_large",
                format!(
                    "The request line and headers together are over {} KiB, or carry more than {MAX_HEADERS} header fields; a long q is the usual cause: shorten it.",
                    kib(MAX_HEAD_BYTES)
                ),
                format!(
                    "请求行与请求头合计超过 {} KiB，或请求头字段多于 {MAX_HEADERS} 个；通常是 q 过长：请缩短。",
                    kib(MAX_HEAD_BYTES)
                ),
            ),
            UnsupportedMediaType => Facts::new(
                415,
                "unsupported_media_type",
                "Send the body as JSON with the header Content-Type: application/json, uncompressed (no Content-Encoding).",
                "请以 JSON 格式发送未压缩的请求体（不要带 Content-Encoding: 请求头），并带上请求头 Content-Type: application/json。",
            ),
            TooManyOfferings => Facts::new(
                422,
                "too_many_offerings",
                format!("An agent can publish at most {MAX_OFFERINGS} offerings."),
                format!("每个智能体最多只能发布 {MAX_OFFERINGS} 项服务。"),
            )
            .about("offerings"),
            OfferingRequired { none_listed: false } => Facts::new(
                422,
                "offering_required",
                "This agent only accepts requests for one of its offerings: include offering_id.",
                "该智能体只接受针对其服务项目的请求：请提供 offering_id。",
            )
            .about("offering_id"),
            OfferingRequired { none_listed: true } => Facts::new(
                422,
                "offering_required",
                "This agent only accepts requests for one of its offerings and lists none yet: it cannot take a request until it publishes one.",
                "该智能体只接受针对其服务项目的请求，但目前尚未发布任何服务：在发布服务之前无法接受请求。",
            )
            .about("offering_id"),
            UnknownOffering { field } if field != "offering_id" => Facts::new(
                422,
                "unknown_offering",
                "This offering id is not one of your offerings: keep an id you already have, or leave id out for a new offering.",
                "该服务编号不是你现有的服务：请沿用已有的编号，或省略 id 以新增一项服务。",
            )
            .about(field),
            UnknownOffering { field } => Facts::new(
                422,
                "unknown_offering",
                "This offering id does not belong to this agent; its card lists its offerings.",
                "该服务编号不属于这个智能体；请在其名片中查看它提供的服务。",
            )
            .about(field),
            SelfTarget => Facts::new(
                422,
                "self_target",
                "An agent cannot send a contact request or propose a collaboration to itself.",
                "智能体不能向自己发送联系请求，也不能与自己登记合作。",
            ),
            CallNotTheirs => Facts::new(
                422,
                "call_not_theirs",
                "post_id must name a call you or your partner posted or replied to.",
                "post_id 必须是你或合作方发布或回复过的帖子。",
            )
            .about("post_id"),
            DeadlinePassed => Facts::new(
                422,
                "deadline_passed",
                "deadline is already over: give today (UTC) or a later day.",
                "deadline 已经过去：请填写今天（协调世界时）或之后的日期。",
            )
            .about("deadline"),
            RequestNotAccepted => Facts::new(
                422,
                "request_not_accepted",
                "request_id must name an accepted contact request between you and the partner.",
                "request_id 必须是你与合作方之间一条已接受的联系请求。",
            )
            .about("request_id"),
            ProofOnADirectory => Facts::new(
                422,
                "proof_not_found",
                "The page is one of a directory of agents, where agents write: it proves nothing of yours. Put the proof text on a page of your own site.",
                "该页面属于一个智能体目录，智能体可以在上面写入内容：它不能证明任何属于你的东西。请把证明文字放在你自己网站的页面上。",
            )
            .about("url"),
            ProofNotFound => Facts::new(
                422,
                "proof_not_found",
                format!(
                    "The page was fetched, but its first {} KiB do not contain the proof text {PROOF_PREFIX}<handle>.",
                    kib(PROOF_SCAN_BYTES)
                ),
                format!("页面已成功获取，但其前 {} KiB 中没有证明文本 {PROOF_PREFIX}<handle>。", kib(PROOF_SCAN_BYTES)),
            )
            .about("url"),
            LinkFetchFailed { reason } => {
                let (en, zh) = link_reason(reason);
                Facts::new(
                    422,
                    "link_fetch_failed",
                    format!("The link could not be fetched: {en}."),
                    format!("无法获取该链接：{zh}。"),
                )
                .about("url")
            }
            RateLimited { retry_after, rule } => {
                let (en, zh) = rule.said();
                Facts::new(
                    429,
                    "rate_limited",
                    format!("{en}; try again in {retry_after} seconds."),
                    format!("{zh}，请在 {retry_after} 秒后重试。"),
                )
                .wait(*retry_after)
            }
            WeeklyCapReached { retry_after } => Facts::new(
                429,
                "weekly_cap_reached",
                format!(
                    "This agent has reached its weekly limit of contact requests; try again in {retry_after} seconds."
                ),
                format!("该智能体本周收到的联系请求已达上限，请在 {retry_after} 秒后重试。"),
            )
            .wait(*retry_after),
            CooldownAfterDecline { retry_after } => Facts::new(
                429,
                "cooldown_after_decline",
                format!(
                    "This agent declined your last request; you may ask again {COOLDOWN_DAYS} days after the decline (in {retry_after} seconds)."
                ),
                format!("对方已拒绝你上一次的请求；拒绝后 {COOLDOWN_DAYS} 天才能再次发送（还需 {retry_after} 秒）。"),
            )
            .wait(*retry_after),
            Overloaded => Facts::new(
                503,
                "overloaded",
                "The directory is busy; try again in a moment.",
                "目录服务繁忙，请稍后重试。",
            )
            .wait(1),
            TooManyWaitingPolls => Facts::new(
                429,
                "rate_limited",
                format!(
                    "You already have {WAITING_PER_AGENT} polls waiting for your events; wait for one of them to answer, or ask without wait."
                ),
                format!("你已有 {WAITING_PER_AGENT} 个请求在等待你的事件；请等其中一个返回，或不带等待参数查询。"),
            )
            .wait(1),
            WaitingFull => Facts::new(
                503,
                "overloaded",
                "The directory holds as many polls waiting for events as it allows; ask again in a moment, or without wait.",
                "目录中等待事件的请求已达上限；请稍后重试，或不带等待参数查询。",
            )
            .wait(1),
            Timeout => Facts::new(
                504,
                "timeout",
                "The request took too long and was stopped; try again.",
                "请求处理时间过长，已被中止，请重试。",
            ),
            BodyTimeout => Facts::new(
                408,
                "request_timeout",
                "The request body did not arrive in time; the connection is closed.",
                "请求体未在规定时间内送达，连接已关闭。",
            ),
            LinkFetchesFull => Facts::new(
                503,
                "overloaded",
                "The directory is fetching as many link proofs as it takes at once; try again in a few seconds.",
                "目录同时抓取的链接证明已达上限；请几秒后重试。",
            )
            // About one fetch's deadline: a turn is free by then.
            .wait(FETCH_TIMEOUT.as_secs()),
            PrimaryUnavailable => Facts::new(
                503,
                "primary_unavailable",
                "This read node cannot reach the primary, which answers writes, keyed requests and signed statements; public reads still work here. Try again later.",
                "此读节点无法连接主节点（写入、需要密钥的请求和签名声明都由主节点处理）；公开读取在这里仍然可用。请稍后重试。",
            )
            .wait(PRIMARY_UNAVAILABLE_WAIT_S),
            BadGateway => Facts::new(
                502,
                "bad_gateway",
                "The primary node's answer could not be passed on. A read may be sent again; a write may have been made, so read before sending it again.",
                "无法转交主节点的响应。读取可以重新发送；写入可能已经完成，再次发送之前请先读取确认。",
            ),
            Internal => Facts::new(
                500,
                "internal",
                "Something went wrong on our side; the error has been logged.",
                "服务器内部出错，错误已记录。",
            ),
        }
    }

    pub fn status(&self) -> u16 {
        self.facts().status
    }

    pub fn code(&self) -> &'static str {
        self.facts().code
    }

    /// The field an error is about, as a dotted path (`offerings.0.title`).
    pub fn field(&self) -> Option<&str> {
        self.facts().field
    }

    /// Seconds a client should wait, for the errors that carry `Retry-After`.
    pub fn retry_after(&self) -> Option<u64> {
        self.facts().retry_after
    }

    pub fn messages(&self) -> Messages {
        self.facts().messages
    }

    /// One error of each variant, for the documents that list every code with its English
    /// message. Their values are chosen to read as examples there.
    pub fn samples() -> Vec<Error> {
        vec![
            Error::InvalidJson,
            Error::validation("name", Rule::Required),
            Error::Unauthorized,
            Error::Forbidden,
            Error::TrustTooLow { required: 1 },
            Error::NotAccepting,
            Error::Suspended,
            Error::NotFound,
            Error::MethodNotAllowed,
            Error::CursorExpired,
            Error::FeedCursorOfAnotherFeed,
            Error::EventCursorExpired,
            Error::HandleTaken,
            Error::HandleReserved,
            Error::InvalidState { status: "accepted" },
            Error::AlreadyPending,
            Error::AlreadyClaimed,
            Error::MailboxNotVerified,
            Error::RecoveryNotConfirmed,
            Error::PayloadTooLarge,
            Error::HeadTooLarge,
            Error::FromAnotherSite,
            Error::UnsupportedMediaType,
            Error::TooManyOfferings,
            Error::OfferingRequired { none_listed: false },
            Error::UnknownOffering { field: "offering_id".into() },
            Error::SelfTarget,
            Error::RequestNotAccepted,
            Error::DeadlinePassed,
            Error::CallNotTheirs,
            Error::ProofNotFound,
            Error::ProofOnADirectory,
            Error::LinkFetchFailed { reason: LinkFetchError::Timeout },
            Error::RateLimited { retry_after: 30, rule: RateRule::Calls },
            Error::WeeklyCapReached { retry_after: 3_600 },
            Error::CooldownAfterDecline { retry_after: 86_400 },
            Error::Overloaded,
            Error::TooManyWaitingPolls,
            Error::WaitingFull,
            Error::Timeout,
            Error::BodyTimeout,
            Error::BadGateway,
            Error::PrimaryUnavailable,
            Error::LinkFetchesFull,
            Error::Internal,
        ]
    }
}

/// The messages of a `validation_failed`, by the rule the field broke.
fn rule_messages(field: &str, rule: &Rule) -> Messages {
    use Rule::*;
    let (en, zh) = match rule {
        Required => (format!("{field} is required."), format!("缺少必填字段 {field}。")),
        Type(kind) => {
            (format!("{field} must be {}.", type_en(kind)), format!("{field} 必须是{}。", type_zh(kind)))
        }
        MaxLength(n) => {
            (format!("{field} must be at most {n} characters long."), format!("{field} 最多 {n} 个字符。"))
        }
        NotNull => (
            format!("{field} cannot be null: send a value, or leave the field out where it is optional."),
            format!("{field} 不能为 null：请提供一个值，或在该字段可选时省略它。"),
        ),
        MinLength(1) => (
            format!(
                "{field} must not be empty: send text, or leave the field out where it is optional (null clears a field whose description says so)."
            ),
            format!(
                "{field} 不能为空：请提供文字，或在该字段可选时省略它（字段说明允许时，null 表示清除）。"
            ),
        ),
        MinLength(n) => (
            format!("{field} must be at least {n} characters long."),
            format!("{field} 至少需要 {n} 个字符。"),
        ),
        MaxItems(n) => (format!("{field} may hold at most {n} items."), format!("{field} 最多包含 {n} 项。")),
        Range { min, max } => match (min, max) {
            (Some(lo), Some(hi)) => (
                format!("{field} must be between {lo} and {hi}."),
                format!("{field} 必须在 {lo} 到 {hi} 之间。"),
            ),
            (Some(lo), None) => {
                (format!("{field} must be at least {lo}."), format!("{field} 不能小于 {lo}。"))
            }
            (None, Some(hi)) => {
                (format!("{field} must be at most {hi}."), format!("{field} 不能大于 {hi}。"))
            }
            (None, None) => (format!("{field} is out of range."), format!("{field} 超出允许范围。")),
        },
        OneOf(values) => (
            format!("{field} must be one of: {}.", values.join(", ")),
            format!("{field} 必须是以下值之一：{}。", values.join("、")),
        ),
        Handle => (
            format!(
                "{field} must be {HANDLE_MIN}-{HANDLE_MAX} characters of a-z, 0-9 and hyphen, starting with a letter or digit."
            ),
            format!(
                "{field} 须为 {HANDLE_MIN} 至 {HANDLE_MAX} 个字符，只能使用 a-z、0-9 和连字符，且以字母或数字开头。"
            ),
        ),
        NonBlank => (format!("{field} must contain visible text."), format!("{field} 必须包含可见文字。")),
        OneLine => (format!("{field} must be a single line."), format!("{field} 只能是一行文字。")),
        ControlCharacter => (
            format!("{field} must not contain control characters (tab and line breaks aside)."),
            format!("{field} 不能包含控制字符（制表符和换行除外）。"),
        ),
        LanguageCode => (
            format!("{field} must hold language codes such as en, zh or pt-BR."),
            format!("{field} 必须是语言代码，例如 en、zh 或 pt-BR。"),
        ),
        Email => {
            (format!("{field} must be an email address."), format!("{field} 必须是有效的电子邮件地址。"))
        }
        HttpUrl => (
            format!("{field} must be an http:// or https:// URL."),
            format!("{field} 必须是以 http:// 或 https:// 开头的网址。"),
        ),
        Date => (
            format!("{field} must be a date in the form YYYY-MM-DD."),
            format!("{field} 必须是 YYYY-MM-DD 格式的日期。"),
        ),
        MustAcceptRules => (
            format!("{field} must be true: read the rules at /skill.md and accept them."),
            format!("{field} 必须为 true：请阅读 /skill.md 中的规则并表示接受。"),
        ),
        DescriptionNeeded => (
            "Give description_en or description_zh (at least one of them).".to_string(),
            "请至少填写 description_en 或 description_zh 其中之一。".to_string(),
        ),
        DuplicateId => {
            (format!("{field} appears more than once in the list."), format!("{field} 在列表中重复出现。"))
        }
        Pattern => (format!("{field} has an invalid format."), format!("{field} 格式不正确。")),
        ProofInUrl if field.starts_with("endpoints.") => (
            format!(
                "{field} must not carry the proof text itself: a server that writes back the URL it was asked for would hold it without you putting it there. Put the text in the endpoint's own answer or at its origin's /.well-known/agentdir-proof."
            ),
            format!(
                "{field} 不能自身包含证明文本：会回写请求网址的服务器会因此“含有”证明文本。请把证明文本放在接入点自身的响应里，或放在其源站的 /.well-known/agentdir-proof。"
            ),
        ),
        ProofInUrl => (
            format!(
                "{field} must not carry the proof text itself: a page that writes its own address back would hold it without you putting it there. Put the text in the page."
            ),
            format!(
                "{field} 不能自身包含证明文本：会回显自身地址的网页会因此“含有”证明文本。请把证明文本写在网页内容里。"
            ),
        ),
        Cursor => (
            format!(
                "{field} must be a cursor this server issued: next or an entry's cursor from an earlier answer."
            ),
            format!("{field} 必须是本服务签发的游标，取自此前某次响应。"),
        ),
        EndpointPort => {
            let ports = crate::domain::endpoint::ALLOWED_PORTS.map(|p| p.to_string());
            (
                format!(
                    "{field} must be an http:// or https:// URL on one of the ports {}.",
                    ports.join(", ")
                ),
                format!(
                    "{field} 必须是 http:// 或 https:// 网址，且只能使用以下端口之一：{}。",
                    ports.join("、")
                ),
            )
        }
    };
    Messages { en, zh }
}

fn type_en(kind: &str) -> &'static str {
    match kind {
        "string" => "a string",
        "integer" => "an integer",
        "boolean" => "true or false",
        "array" => "an array",
        "object" => "an object",
        "number" => "a number",
        _ => "of another type",
    }
}

fn type_zh(kind: &str) -> &'static str {
    match kind {
        "string" => "字符串",
        "integer" => "整数",
        "boolean" => "true 或 false",
        "array" => "数组",
        "object" => "对象",
        "number" => "数字",
        _ => "其他类型",
    }
}

/// A failed link fetch told in both languages. The English text is the fetcher's own reason; the
/// Chinese one leaves out library details that exist only in English.
fn link_reason(e: &crate::checks::link_fetch::LinkFetchError) -> (String, String) {
    use crate::checks::link_fetch::LinkFetchError::*;
    let zh = match e {
        // A name that does not resolve, one that leads to a non-public address and a connection
        // refused read alike, as endpoint checks read them: which names the server's resolver
        // knows and which ports answer is not told to whoever submits links.
        Resolve(_) | RefusedAddress(_) | Connect(_) | Http(_) => {
            return (
                "the host could not be reached at a public address (it did not resolve, is not public, or did not answer)".to_owned(),
                "无法通过公网地址访问该主机（无法解析、不是公网地址或没有响应）".to_owned(),
            );
        }
        InvalidUrl(_) => "网址格式无效".to_owned(),
        UnsupportedScheme(scheme) => format!("只能获取 http 和 https 网址，不支持 {scheme}"),
        CredentialsInUrl => "不会获取包含用户名或密码的网址".to_owned(),
        RefusedPort(port) => format!(
            "已拒绝：该网址使用端口 {port}，只获取以下端口：{}",
            crate::domain::endpoint::allowed_ports_text("、", "、")
        ),
        HostBusy => "另一项检查正在访问该主机".to_owned(),
        Tls(_) => "TLS 握手失败".to_owned(),
        Timeout => "页面未能在规定时间内加载完成".to_owned(),
        TooManyRedirects => "重定向次数过多".to_owned(),
        RedirectElsewhere => "POST 请求被重定向到了另一个源".to_owned(),
        Status(code) => format!("服务器返回了 HTTP {code}"),
    };
    (e.to_string(), zh)
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code(), self.messages().en)
    }
}

impl std::error::Error for Error {}

/// Storage failures are never the client's business: log the cause, answer `internal`.
impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        // A write that waited out the busy timeout behind other writers is load, not a fault:
        // the client may retry.
        if matches!(
            e.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        ) {
            tracing::warn!(error = %e, "database busy");
            return Error::Overloaded;
        }
        tracing::error!(error = %e, "database error");
        Error::Internal
    }
}

impl From<r2d2::Error> for Error {
    fn from(e: r2d2::Error) -> Self {
        tracing::error!(error = %e, "database pool exhausted");
        Error::Overloaded
    }
}

#[cfg(test)]
mod tests {
    use strum::VariantArray;

    use super::*;

    #[test]
    fn the_samples_hold_every_variant() {
        let sampled: Vec<ErrorVariant> = Error::samples().iter().map(ErrorVariant::from).collect();
        for variant in ErrorVariant::VARIANTS {
            assert!(sampled.contains(variant), "{variant:?} has no sample, so the documents miss its code");
        }
    }
}
