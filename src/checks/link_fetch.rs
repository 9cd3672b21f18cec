//! Link-proof fetching: loads a user-supplied http(s) URL and tells whether the page holds a
//! given text, without letting the URL reach anything but the public internet (SSRF).
//!
//! Every hop (the first URL and each redirect) is checked the same way: http or https only, no
//! credentials, one of the web ports (`domain::endpoint::ALLOWED_PORTS`, unless the operator lifted
//! the port rule with the address rule), and every address its host resolves to must be public. The connection is then
//! pinned to exactly those checked addresses, so a second DNS answer (DNS rebinding) can never
//! redirect it; the HTTP client is given a resolver that refuses every name, so nothing outside
//! the checked set is reachable even by mistake. Redirects are followed by hand, the whole fetch
//! shares one deadline, and at most `max_bytes` of the final body are read.
//!
//! It owns no state: recording or expiring proofs is the caller's business.

use std::any::Any;
use std::error::Error as _;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use ipnet::{Ipv4Net, Ipv6Net};
use url::{Host, Url};

use crate::domain::endpoint::{ALLOWED_PORTS, allowed_ports_text};
use crate::domain::trust::continues_handle;

/// Sent on every request so site owners can recognise (and allow) the proof fetcher.
pub const USER_AGENT: &str = "agentdir-link-proof/1";

/// How much of a page is searched for the proof text.
pub const PROOF_SCAN_BYTES: usize = 256 * 1024;
/// How many redirects a fetch follows before giving up.
pub const MAX_REDIRECTS: usize = 3;
/// Deadline of a whole fetch: DNS, every hop and the body.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// Which non-public addresses link-proof fetches may reach (public ones only, unless an
/// operator testing locally says otherwise).
#[derive(Debug, Clone, Default, PartialEq)]
pub enum PrivateTargets {
    #[default]
    None,
    All,
    Only(Vec<ipnet::IpNet>),
}

/// Limits of one fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPolicy {
    /// Skip the public-address check (local testing only); every other rule still applies.
    pub allow_private: bool,
    /// Non-public networks that are let through anyway (local testing of one range, e.g.
    /// loopback, while every other non-public address stays refused).
    pub also_allow: Vec<ipnet::IpNet>,
    /// Deadline for the whole fetch: DNS, every hop and the body.
    pub timeout: Duration,
    /// How much of the final body is searched.
    pub max_bytes: usize,
    /// How many redirects are followed before giving up.
    pub max_redirects: usize,
    /// The ports every hop may use; None lets any port through (local testing only).
    pub ports: Option<Vec<u16>>,
}

impl Default for FetchPolicy {
    fn default() -> Self {
        FetchPolicy {
            allow_private: false,
            also_allow: Vec::new(),
            timeout: FETCH_TIMEOUT,
            max_bytes: PROOF_SCAN_BYTES,
            max_redirects: MAX_REDIRECTS,
            ports: Some(ALLOWED_PORTS.to_vec()),
        }
    }
}

impl FetchPolicy {
    /// The production policy, reaching the non-public addresses `targets` lets through. Letting
    /// any non-public address through lifts the port rule too (local test servers listen on any
    /// port), as it does for the endpoints an agent may list.
    pub fn reaching(targets: &PrivateTargets) -> FetchPolicy {
        let (allow_private, also_allow) = match targets {
            PrivateTargets::None => (false, Vec::new()),
            PrivateTargets::All => (true, Vec::new()),
            PrivateTargets::Only(nets) => (false, nets.clone()),
        };
        let ports = (*targets == PrivateTargets::None).then(|| ALLOWED_PORTS.to_vec());
        FetchPolicy { allow_private, also_allow, ports, ..FetchPolicy::default() }
    }
}

/// The result of a fetch that reached a 2xx page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchOutcome {
    /// The needle occurs in the first `max_bytes` of the body of `final_url` (after redirects).
    Found {
        final_url: String,
    },
    NotFound,
    /// The page is a directory's (its answer carries `trust::DIRECTORY_HEADER`): agents write
    /// there, so whatever it holds proves nothing.
    OnADirectory,
}

/// Why a fetch failed. `Display` is a one-line English reason that holds no credentials and no
/// address the user did not write (a resolved address could reveal internal DNS).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkFetchError {
    #[error("invalid URL: {0}")]
    InvalidUrl(String),
    #[error("only http and https URLs can be fetched, not {0}")]
    UnsupportedScheme(String),
    #[error("URLs that contain a user name or password are not fetched")]
    CredentialsInUrl,
    #[error("could not resolve the host {0}")]
    Resolve(String),
    /// The address is kept for logs; it is not shown.
    #[error("refused: the URL leads to a non-public address")]
    RefusedAddress(IpAddr),
    #[error("refused: the URL leads to port {0}; only ports {ports} are fetched", ports = allowed_ports_text(", ", " and "))]
    RefusedPort(u16),
    /// Another endpoint check is talking to the same host: checks take turns (`HopGate`).
    #[error("another check is talking to this host")]
    HostBusy,
    #[error("could not connect: {0}")]
    Connect(String),
    #[error("the TLS handshake failed: {0}")]
    Tls(String),
    #[error("the page did not load in time")]
    Timeout,
    #[error("too many redirects")]
    TooManyRedirects,
    /// A POST was redirected to another origin: its body is sent again only where it was sent.
    #[error("a POST was redirected to another origin")]
    RedirectElsewhere,
    #[error("the server answered HTTP {0}")]
    Status(u16),
    #[error("the request failed: {0}")]
    Http(String),
}

/// Parses a URL and applies the rules that need no network: http(s) only, a host, and no
/// user name or password.
pub fn check_url(url: &str) -> Result<Url, LinkFetchError> {
    let parsed = Url::parse(url).map_err(|e| LinkFetchError::InvalidUrl(e.to_string()))?;
    check_parsed_url(&parsed)?;
    Ok(parsed)
}

/// The one spelling of a URL that endpoints are kept and compared in: as the WHATWG parser
/// writes it (scheme and host in lower case, no default port, no dot segments), without a
/// fragment (never sent) or an empty query, without a trailing dot on the host name, and with
/// percent-encoded unreserved characters decoded (RFC 3986, 6.2.2). Spellings of one endpoint
/// are one endpoint, so none of them counts it again for another agent.
pub fn canonical(url: &Url) -> String {
    let mut url = url.clone();
    url.set_fragment(None);
    if url.query() == Some("") {
        url.set_query(None);
    }
    crate::domain::endpoint::drop_trailing_dots(&mut url);
    let path = unreserved_decoded(url.path());
    url.set_path(&path);
    if let Some(query) = url.query().map(unreserved_decoded) {
        url.set_query(Some(&query));
    }
    url.to_string()
}

/// `text` with each percent-encoded unreserved character (letters, digits, `-._~`) written as
/// itself, and a `%` that starts no escape written as `%25` (what a server reads it as), so that
/// decoding never makes a new escape: the result is its own canonical form. Every other escape
/// is kept, in upper case.
fn unreserved_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'%' {
            let c = text[i..].chars().next().unwrap_or_default();
            out.push(c);
            i += c.len_utf8();
            continue;
        }
        let escaped = text
            .get(i + 1..i + 3)
            .filter(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(b) if b.is_ascii_alphanumeric() || b"-._~".contains(&b) => out.push(char::from(b)),
            // Hex digits in upper case (RFC 3986, 6.2.2.1): `%c3` and `%C3` are one escape.
            Some(_) => out.push_str(&text[i..i + 3].to_ascii_uppercase()),
            None => {
                out.push_str("%25");
                i += 1;
                continue;
            }
        }
        i += 3;
    }
    out
}

fn check_parsed_url(url: &Url) -> Result<(), LinkFetchError> {
    match url.scheme() {
        "http" | "https" => {}
        other => return Err(LinkFetchError::UnsupportedScheme(format!("{other}:"))),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(LinkFetchError::CredentialsInUrl);
    }
    if url.host().is_none() {
        return Err(LinkFetchError::InvalidUrl("the URL has no host".into()));
    }
    Ok(())
}

/// Whether `policy` lets a hop use the URL's port (the scheme's own port when it names none).
fn check_port(url: &Url, policy: &FetchPolicy) -> Result<(), LinkFetchError> {
    let port = url
        .port_or_known_default()
        .ok_or_else(|| LinkFetchError::InvalidUrl("the URL has no port".into()))?;
    match &policy.ports {
        Some(ports) if !ports.contains(&port) => Err(LinkFetchError::RefusedPort(port)),
        _ => Ok(()),
    }
}

/// Asked before every hop connects (the first URL and each redirect, for every request), with
/// the addresses the hop was checked and pinned to: the endpoint checks use it so that no two of
/// them talk to one host at once, whichever hop brings them there. What `admit` returns is kept
/// while the hop is in use (until its answer has been read, or the next redirect is followed)
/// and dropped after it; an error ends the fetch.
pub trait HopGate: Sync {
    fn admit(&self, url: &Url, addrs: &[SocketAddr]) -> Result<Box<dyn Any + Send>, LinkFetchError>;
}

/// The gate of fetches that take no turns (link proofs: their budget is the agent's rate limit).
pub struct Open;

impl HopGate for Open {
    fn admit(&self, _: &Url, _: &[SocketAddr]) -> Result<Box<dyn Any + Send>, LinkFetchError> {
        Ok(Box::new(()))
    }
}

/// Resolves a redirect's `Location` against the URL that answered it and applies `check_url`'s
/// rules to the result.
pub fn redirect_target(current: &Url, location: &str) -> Result<Url, LinkFetchError> {
    let next = current
        .join(location.trim())
        .map_err(|e| LinkFetchError::InvalidUrl(format!("redirect location: {e}")))?;
    check_parsed_url(&next)?;
    Ok(next)
}

const fn v4(a: u8, b: u8, c: u8, d: u8, len: u8) -> Ipv4Net {
    Ipv4Net::new_assert(Ipv4Addr::new(a, b, c, d), len)
}

#[allow(clippy::too_many_arguments)]
const fn v6(a: u16, b: u16, c: u16, d: u16, e: u16, f: u16, g: u16, h: u16, len: u8) -> Ipv6Net {
    Ipv6Net::new_assert(Ipv6Addr::new(a, b, c, d, e, f, g, h), len)
}

/// IPv4 ranges that are not the public internet (IANA special-purpose registry) plus public
/// addresses that act as cloud metadata services inside the cloud.
const V4_REFUSED: &[Ipv4Net] = &[
    v4(0, 0, 0, 0, 8),        // "this network"; 0.0.0.0 reaches the local host
    v4(10, 0, 0, 0, 8),       // private
    v4(100, 64, 0, 0, 10),    // CGNAT shared space (Alibaba metadata 100.100.100.200)
    v4(127, 0, 0, 0, 8),      // loopback
    v4(169, 254, 0, 0, 16),   // link-local, holds the 169.254.169.254 metadata service
    v4(172, 16, 0, 0, 12),    // private
    v4(192, 0, 0, 0, 24),     // IETF protocol assignments (Oracle metadata 192.0.0.192)
    v4(192, 0, 2, 0, 24),     // TEST-NET-1
    v4(192, 88, 99, 0, 24),   // deprecated 6to4 relay anycast
    v4(192, 168, 0, 0, 16),   // private
    v4(198, 18, 0, 0, 15),    // benchmarking
    v4(198, 51, 100, 0, 24),  // TEST-NET-2
    v4(203, 0, 113, 0, 24),   // TEST-NET-3
    v4(224, 0, 0, 0, 4),      // multicast
    v4(240, 0, 0, 0, 4),      // reserved, including broadcast 255.255.255.255
    v4(168, 63, 129, 16, 32), // Azure wireserver: public-looking, but answers only inside Azure
];

/// Inside 2000::/3 (the only IPv6 unicast space handed out for public use), the special blocks.
const V6_REFUSED: &[Ipv6Net] = &[
    v6(0x2001, 0, 0, 0, 0, 0, 0, 0, 23), // IETF protocol assignments: Teredo, ORCHID, benchmarking
    v6(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0, 32), // documentation
    v6(0x3fff, 0, 0, 0, 0, 0, 0, 0, 20), // documentation (RFC 9637)
];

const V6_GLOBAL_UNICAST: Ipv6Net = v6(0x2000, 0, 0, 0, 0, 0, 0, 0, 3);
const V6_NAT64: Ipv6Net = v6(0x64, 0xff9b, 0, 0, 0, 0, 0, 0, 96);
const V6_6TO4: Ipv6Net = v6(0x2002, 0, 0, 0, 0, 0, 0, 0, 16);
const V6_V4_MAPPED: Ipv6Net = v6(0, 0, 0, 0, 0, 0xffff, 0, 0, 96);

/// True when `ip` is a public unicast address that a proof fetch may connect to.
///
/// IPv6 forms that carry an IPv4 address (mapped, NAT64 `64:ff9b::/96`, 6to4) are judged by that
/// address. IPv4-compatible `::a.b.c.d` is deprecated and never a public host, so it is refused;
/// so is everything outside 2000::/3 (ULA fc00::/7 with `fd00:ec2::254`, link-local, site-local,
/// multicast, loopback, unspecified).
pub fn is_public_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => is_public_v4(ip),
        IpAddr::V6(ip) => is_public_v6(ip),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    !V4_REFUSED.iter().any(|net| net.contains(&ip))
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let embedded_tail = || {
        let o = ip.octets();
        Ipv4Addr::new(o[12], o[13], o[14], o[15])
    };
    if V6_V4_MAPPED.contains(&ip) || V6_NAT64.contains(&ip) {
        return is_public_v4(embedded_tail());
    }
    if V6_6TO4.contains(&ip) {
        let o = ip.octets();
        return is_public_v4(Ipv4Addr::new(o[2], o[3], o[4], o[5]));
    }
    V6_GLOBAL_UNICAST.contains(&ip) && !V6_REFUSED.iter().any(|net| net.contains(&ip))
}

/// Host name lookup, behind a trait so tests can answer names without DNS.
trait Resolver: Sync {
    fn lookup(&self, host: &str, port: u16) -> impl Future<Output = io::Result<Vec<SocketAddr>>> + Send;
}

struct SystemResolver;

impl Resolver for SystemResolver {
    async fn lookup(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        Ok(tokio::net::lookup_host((host, port)).await?.collect())
    }
}

/// The per-hop gate: checks the URL, resolves its host once and checks every address. The
/// returned addresses are the only ones the hop may connect to.
pub async fn check_hop(url: &Url, allow_private: bool) -> Result<Vec<SocketAddr>, LinkFetchError> {
    let gate = |ip: IpAddr| allow_private || is_public_ip(ip);
    resolve_checked(url, &SystemResolver, &gate).await
}

async fn resolve_checked(
    url: &Url,
    resolver: &impl Resolver,
    allowed: &(dyn Fn(IpAddr) -> bool + Sync),
) -> Result<Vec<SocketAddr>, LinkFetchError> {
    check_parsed_url(url)?;
    let port = url
        .port_or_known_default()
        .ok_or_else(|| LinkFetchError::InvalidUrl("the URL has no port".into()))?;
    let addrs = match url.host() {
        Some(Host::Ipv4(ip)) => vec![SocketAddr::new(ip.into(), port)],
        Some(Host::Ipv6(ip)) => vec![SocketAddr::new(ip.into(), port)],
        Some(Host::Domain(name)) => {
            let unresolved = || LinkFetchError::Resolve(name.to_string());
            // `example.com.` is the same name; some resolvers only know it without the dot.
            let lookup_name = name.strip_suffix('.').unwrap_or(name);
            let addrs = resolver.lookup(lookup_name, port).await.map_err(|_| unresolved())?;
            if addrs.is_empty() {
                return Err(unresolved());
            }
            addrs
        }
        None => return Err(LinkFetchError::InvalidUrl("the URL has no host".into())),
    };
    // One bad address is enough to refuse: the client could pick any of them.
    if let Some(bad) = addrs.iter().find(|a| !allowed(a.ip())) {
        return Err(LinkFetchError::RefusedAddress(bad.ip()));
    }
    Ok(addrs)
}

/// Whether `policy` lets a fetch connect to `ip`.
fn allowed_by(policy: &FetchPolicy) -> impl Fn(IpAddr) -> bool + Sync + '_ {
    |ip: IpAddr| {
        policy.allow_private || is_public_ip(ip) || policy.also_allow.iter().any(|net| net.contains(&ip))
    }
}

/// Fetches `url` under `policy` and tells whether the final 2xx body holds `needle` as a whole
/// within its first `max_bytes` bytes: not followed by a character that would go on a handle
/// (`trust::continues_handle`), so `agentdir-proof:davey` does not hold `agentdir-proof:dave`.
pub async fn fetch_contains(
    url: &str,
    needle: &str,
    policy: &FetchPolicy,
) -> Result<FetchOutcome, LinkFetchError> {
    fetch_with(url, needle, policy, &SystemResolver, &allowed_by(policy)).await
}

async fn fetch_with(
    url: &str,
    needle: &str,
    policy: &FetchPolicy,
    resolver: &impl Resolver,
    allowed: &(dyn Fn(IpAddr) -> bool + Sync),
) -> Result<FetchOutcome, LinkFetchError> {
    let url = check_url(url)?;
    let find = async {
        let (url, response, _hop) = send(url, &Request::get(), policy, resolver, allowed, &Open).await?;
        let status = response.status();
        if !status.is_success() {
            return Err(LinkFetchError::Status(status.as_u16()));
        }
        if response.headers().contains_key(crate::domain::trust::DIRECTORY_HEADER) {
            return Ok(FetchOutcome::OnADirectory);
        }
        Ok(if body_contains(response, needle.as_bytes(), policy.max_bytes).await? {
            FetchOutcome::Found { final_url: url.to_string() }
        } else {
            FetchOutcome::NotFound
        })
    };
    tokio::time::timeout(policy.timeout, find).await.unwrap_or(Err(LinkFetchError::Timeout))
}

/// One request beyond a plain page load (an endpoint check): a GET, or a POST of a JSON body,
/// with extra headers.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub headers: Vec<(&'static str, String)>,
    /// Sent as a POST with `Content-Type: application/json` when present.
    pub json_body: Option<Vec<u8>>,
}

impl Request {
    pub fn get() -> Request {
        Request::default()
    }

    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Request {
        self.headers.push((name, value.into()));
        self
    }
}

/// What a server answered, whatever the status: the status, the headers, and at most
/// `max_bytes` of the body.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The URL that answered: the one asked, or where its redirects led.
    pub url: Url,
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
    /// The body reached `max_bytes` (and was not read further).
    pub truncated: bool,
}

/// Sends `request` to `url` under `policy`'s rules (the same address and port checks, pinning,
/// deadline and read bound as proof fetches, every hop admitted by `gate`) and returns the
/// answer, whatever its status. A GET follows redirects like a proof fetch; a POST follows a
/// `307` or `308` (which keep the method and the body) to the same origin only, each hop checked
/// the same way, and a redirect to another origin is `RedirectElsewhere`; to any other redirect
/// of a POST the answer is the redirect.
pub async fn exchange(
    url: &str,
    request: &Request,
    policy: &FetchPolicy,
    gate: &dyn HopGate,
) -> Result<Answer, LinkFetchError> {
    exchange_until(url, request, policy, gate, &mut |_, _| false).await
}

/// `exchange`, but the body is read only until `enough` says it has what the caller needs: a
/// stream the server keeps open after its answer (an SSE response) then ends there instead of
/// at the deadline. `enough` is given each part of the body as it arrives (with the answer's
/// headers), once, so a caller that parses as it goes does work in proportion to the body,
/// however small the parts a server sends.
pub async fn exchange_until(
    url: &str,
    request: &Request,
    policy: &FetchPolicy,
    gate: &dyn HopGate,
    enough: &mut (dyn FnMut(&reqwest::header::HeaderMap, &[u8]) -> bool + Send),
) -> Result<Answer, LinkFetchError> {
    let url = check_url(url)?;
    let allowed = allowed_by(policy);
    let answer = async {
        let (answered, mut response, _hop) =
            send(url, request, policy, &SystemResolver, &allowed, gate).await?;
        let status = response.status().as_u16();
        let headers = std::mem::take(response.headers_mut());
        let mut body = Vec::new();
        let mut truncated = false;
        while let Some(chunk) = response.chunk().await.map_err(request_error)? {
            let take = chunk.len().min(policy.max_bytes - body.len());
            let part = chunk.get(..take).unwrap_or_default();
            body.extend_from_slice(part);
            // A body that reaches the bound is taken to go on past it.
            truncated = body.len() >= policy.max_bytes;
            if truncated || enough(&headers, part) {
                break;
            }
        }
        Ok(Answer { url: answered, status, headers, body, truncated })
    };
    tokio::time::timeout(policy.timeout, answer).await.unwrap_or(Err(LinkFetchError::Timeout))
}

/// Sends one request, hop by hop: every hop's port and addresses are checked and pinned, and
/// the hop is admitted by `gate`; redirects of a GET, and same-origin `307`/`308` of a POST, are
/// followed (at most `max_redirects`, each checked the same way). Returns the final URL, its response, whatever its status, and what
/// the gate gave for it (to be kept while the answer is read).
async fn send(
    mut url: Url,
    request: &Request,
    policy: &FetchPolicy,
    resolver: &impl Resolver,
    allowed: &(dyn Fn(IpAddr) -> bool + Sync),
    gate: &dyn HopGate,
) -> Result<(Url, reqwest::Response, Box<dyn Any + Send>), LinkFetchError> {
    let mut redirects = 0;
    let first_origin = url.origin();
    loop {
        check_port(&url, policy)?;
        let addrs = resolve_checked(&url, resolver, allowed).await?;
        let hop = gate.admit(&url, &addrs)?;
        let client = pinned_client(&url, &addrs, policy)?;
        let mut builder = match &request.json_body {
            Some(body) => client
                .post(url.clone())
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.clone()),
            None => client.get(url.clone()),
        };
        for (name, value) in &request.headers {
            builder = builder.header(*name, value);
        }
        let response = builder.send().await.map_err(request_error)?;
        let status = response.status();
        let followed: &[u16] =
            if request.json_body.is_some() { &[307, 308] } else { &[301, 302, 303, 307, 308] };
        if !followed.contains(&status.as_u16()) {
            return Ok((url, response, hop));
        }
        let Some(location) = response.headers().get(reqwest::header::LOCATION) else {
            return Err(LinkFetchError::Status(status.as_u16()));
        };
        if redirects >= policy.max_redirects {
            return Err(LinkFetchError::TooManyRedirects);
        }
        redirects += 1;
        let location = location
            .to_str()
            .map_err(|_| LinkFetchError::InvalidUrl("redirect location is not valid text".into()))?;
        let next = redirect_target(&url, location)?;
        if request.json_body.is_some() && next.origin() != first_origin {
            return Err(LinkFetchError::RedirectElsewhere);
        }
        // Done with this hop before the next is admitted: a redirect back to a host held only
        // for this hop must not wait for itself.
        drop(response);
        drop(hop);
        url = next;
    }
}

/// A name resolver for the HTTP client that refuses every name: the only names it may reach
/// are the pinned overrides, so a missed override fails closed instead of asking DNS again.
struct NoDns;

impl reqwest::dns::Resolve for NoDns {
    fn resolve(&self, _name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        Box::pin(async {
            Err::<reqwest::dns::Addrs, _>("name resolution outside the checked addresses is disabled".into())
        })
    }
}

/// A one-hop client whose connections can only go to `addrs`; TLS SNI and `Host` still carry
/// the URL's host name.
fn pinned_client(
    url: &Url,
    addrs: &[SocketAddr],
    policy: &FetchPolicy,
) -> Result<reqwest::Client, LinkFetchError> {
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .referer(false)
        .user_agent(USER_AGENT)
        .http1_only()
        .pool_max_idle_per_host(0)
        .connect_timeout(policy.timeout)
        .dns_resolver(Arc::new(NoDns));
    if let Some(Host::Domain(name)) = url.host() {
        builder = builder.resolve_to_addrs(name, addrs);
    }
    builder.build().map_err(|e| LinkFetchError::Http(describe(&e.without_url())))
}

/// Streams the body and stops as soon as the needle shows up or `max_bytes` have been read.
/// Only the last `needle.len() - 1` bytes are carried over, which is enough for a needle split
/// across chunks.
async fn body_contains(
    mut response: reqwest::Response,
    needle: &[u8],
    max_bytes: usize,
) -> Result<bool, LinkFetchError> {
    if needle.is_empty() {
        return Ok(true);
    }
    // The bytes kept from one chunk to the next: a needle may be cut by a chunk's end, and one
    // that ends a chunk is whole only if the byte after it (in the next chunk) ends it.
    let keep = needle.len();
    let mut window: Vec<u8> = Vec::new();
    let mut read = 0usize;
    while read < max_bytes {
        let Some(chunk) = response.chunk().await.map_err(request_error)? else {
            break;
        };
        let take = chunk.len().min(max_bytes - read);
        read += take;
        window.extend_from_slice(chunk.get(..take).unwrap_or_default());
        if holds_whole(&window, needle) {
            return Ok(true);
        }
        if window.len() > keep {
            window.drain(..window.len() - keep);
        }
    }
    // What was read ended here: a needle at the very end is whole.
    Ok(window.ends_with(needle))
}

/// Whether `window` holds `needle` followed by a byte that ends it (see `fetch_contains`). A
/// needle at the window's very end is undecided until the next byte is read. A needle that does
/// not end in a handle's character (a header line, say) is whole wherever it is.
fn holds_whole(window: &[u8], needle: &[u8]) -> bool {
    let ends_a_word = needle.last().is_some_and(|&b| continues_handle(char::from(b)));
    window.windows(needle.len()).enumerate().filter(|(_, w)| *w == needle).any(|(at, _)| {
        !ends_a_word || window.get(at + needle.len()).is_some_and(|&b| !continues_handle(char::from(b)))
    })
}

fn request_error(e: reqwest::Error) -> LinkFetchError {
    if e.is_timeout() {
        return LinkFetchError::Timeout;
    }
    let connect = e.is_connect();
    let tls = is_tls(&e);
    let detail = describe(&e.without_url());
    if tls {
        LinkFetchError::Tls(detail)
    } else if connect {
        LinkFetchError::Connect(detail)
    } else {
        LinkFetchError::Http(detail)
    }
}

/// Whether a TLS error (rustls', wrapped in the I/O error the connection gave) is among the
/// causes of `e`.
fn is_tls(e: &reqwest::Error) -> bool {
    let mut source = e.source();
    while let Some(cause) = source {
        let inner = cause.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref());
        if cause.is::<rustls::Error>() || inner.is_some_and(|i| i.is::<rustls::Error>()) {
            return true;
        }
        source = cause.source();
    }
    false
}

/// The innermost causes of an error on one short line ("tcp connect error: Connection refused").
fn describe(e: &reqwest::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut source = e.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        // hyper-util's wrapper ("client error (Connect)") says nothing the variant does not.
        if !text.starts_with("client error") && parts.last() != Some(&text) {
            parts.push(text);
        }
        source = cause.source();
    }
    if parts.is_empty() {
        parts.push(e.to_string());
    }
    let line: String =
        parts.join(": ").chars().map(|c| if c.is_control() { ' ' } else { c }).take(200).collect();
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_one_url_are_one_canonical_url() {
        let one = |u: &str| canonical(&check_url(u).expect(u));
        let plain = one("http://127.0.0.1:18111/a2a/shared");
        for spelling in [
            "http://127.0.0.1:18111/a2a/shared#frag",
            "HTTP://127.0.0.1:18111/a2a/shared",
            "http://127.0.0.1:18111/a2a/./shared",
            "http://127.0.0.1:18111/a2a/shared?",
            "http://127.0.0.1:18111/a2a/%73hared",
            "http://127.0.0.1:18111/a2a/x/../shared",
        ] {
            assert_eq!(one(spelling), plain, "{spelling}");
        }
        assert_eq!(one("http://LOCALHOST.:8080/mcp"), one("http://localhost:8080/mcp"));
        assert_eq!(one("https://example.org:443/a"), "https://example.org/a");
        // Escapes of reserved or non-ASCII characters stay: they name another resource.
        assert_eq!(one("https://example.org/a%2Fb"), "https://example.org/a%2Fb");
        assert_eq!(one("https://example.org/%E4%B8%AD?q=%7e"), "https://example.org/%E4%B8%AD?q=~");
        // A `%` that starts no escape is the text `%`: decoding what follows it makes no escape
        // of it, and the canonical form is its own.
        assert_eq!(one("http://h/%%34%31"), "http://h/%2541");
        assert_eq!(one("http://h/a?%%37e"), "http://h/a?%257e");
        assert_eq!(one("http://example.com../"), "http://example.com/");
        assert_eq!(one("http://h/%c3%a9?q=%e4%b8%ad"), one("http://h/%C3%A9?q=%E4%B8%AD"));
        for u in [
            "http://h/%%34%31",
            "http://h/a?%%37e&b=%zz",
            "http://example.com../x/%7E",
            "http://h/%2",
            "http://h/%",
        ] {
            let once = one(u);
            assert_eq!(one(&once), once, "{u}");
        }
    }
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    const NEEDLE: &str = "agentdir-proof:alice";
    const LIMIT: usize = PROOF_SCAN_BYTES;

    /// Loopback test servers listen on any port: the port rule is lifted with the address rule.
    fn local_policy() -> FetchPolicy {
        FetchPolicy { allow_private: true, ports: None, ..FetchPolicy::default() }
    }

    fn loopback_or_public(ip: IpAddr) -> bool {
        ip.is_loopback() || is_public_ip(ip)
    }

    /// Answers names from a table and counts lookups; never touches DNS.
    struct FakeDns {
        names: HashMap<&'static str, Vec<IpAddr>>,
        calls: AtomicUsize,
    }

    impl FakeDns {
        fn new(names: &[(&'static str, &[&str])]) -> Self {
            let names = names
                .iter()
                .map(|(name, ips)| {
                    let ips = ips.iter().map(|ip| ip.parse().expect("test ip")).collect();
                    (*name, ips)
                })
                .collect();
            FakeDns { names, calls: AtomicUsize::new(0) }
        }
    }

    impl Resolver for FakeDns {
        async fn lookup(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            self.names
                .get(host)
                .map(|ips| ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect())
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such name"))
        }
    }

    /// A small HTTP/1.1 server on 127.0.0.1; it lives as long as the test's runtime.
    async fn serve() -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("local addr").port();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(handle(stream, port));
            }
        });
        port
    }

    async fn handle(mut stream: TcpStream, port: u16) {
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        let head = String::from_utf8_lossy(&head).into_owned();
        let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
        let _ = respond(&mut stream, &path, &head, port).await;
    }

    async fn send(stream: &mut TcpStream, status: &str, headers: &str, body: &[u8]) -> io::Result<()> {
        let head = format!(
            "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body).await?;
        stream.shutdown().await
    }

    async fn send_chunks(stream: &mut TcpStream, chunks: &[&[u8]]) -> io::Result<()> {
        stream
            .write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
            .await?;
        for chunk in chunks {
            stream.write_all(format!("{:x}\r\n", chunk.len()).as_bytes()).await?;
            stream.write_all(chunk).await?;
            stream.write_all(b"\r\n").await?;
            stream.flush().await?;
            // Separate TCP reads, so the client sees separate chunks.
            tokio::time::sleep(Duration::from_millis(15)).await;
        }
        stream.write_all(b"0\r\n\r\n").await?;
        stream.shutdown().await
    }

    fn padded(before: usize, text: &str) -> Vec<u8> {
        let mut body = vec![b'x'; before];
        body.extend_from_slice(text.as_bytes());
        body.extend_from_slice(b"\n</html>");
        body
    }

    async fn respond(stream: &mut TcpStream, path: &str, head: &str, port: u16) -> io::Result<()> {
        let redirect = |to: String| format!("Location: {to}\r\n");
        match path {
            "/found" => {
                let body = format!("<html><body><p>{NEEDLE}</p></body></html>");
                send(stream, "200 OK", "Content-Type: text/html\r\n", body.as_bytes()).await
            }
            "/notfound" => send(stream, "200 OK", "", b"<html>agentdir-proof:bob</html>").await,
            "/echo" => send(stream, "200 OK", "", head.as_bytes()).await,
            "/missing" => send(stream, "404 Not Found", "", b"no").await,
            "/error" => send(stream, "500 Internal Server Error", "", b"").await,
            "/at-limit" => send(stream, "200 OK", "", &padded(LIMIT - NEEDLE.len(), NEEDLE)).await,
            "/beyond-limit" => send(stream, "200 OK", "", &padded(LIMIT - NEEDLE.len() + 1, NEEDLE)).await,
            "/straddle" => send_chunks(stream, &[b"<html>agentdir-pr", b"oof:alice</html>"]).await,
            // Another handle's proof text, which begins with alice's.
            "/longer" => send(stream, "200 OK", "", b"<p>agentdir-proof:alice-bot</p>").await,
            "/longer-split" => send_chunks(stream, &[b"<p>agentdir-proof:alice", b"_x</p>"]).await,
            "/whole-split" => send_chunks(stream, &[b"<p>agentdir-proof:alice", b" and more</p>"]).await,
            "/bytewise" => {
                let chunks: Vec<&[u8]> = NEEDLE.as_bytes().chunks(1).collect();
                send_chunks(stream, &chunks).await
            }
            "/to-metadata" => {
                let to = redirect("http://169.254.169.254/latest/meta-data/".into());
                send(stream, "302 Found", &to, b"").await
            }
            "/to-ftp" => send(stream, "302 Found", &redirect("ftp://127.0.0.1/x".into()), b"").await,
            "/to-port-22" => {
                send(stream, "302 Found", &redirect("http://127.0.0.1:22/found".into()), b"").await
            }
            "/to-creds" => {
                let to = redirect(format!("http://user:secret@127.0.0.1:{port}/found"));
                send(stream, "301 Moved Permanently", &to, b"").await
            }
            "/to-name" => {
                let to = redirect(format!("http://second.test:{port}/echo"));
                send(stream, "307 Temporary Redirect", &to, b"").await
            }
            "/cookie" => {
                let headers = "Set-Cookie: session=secret; Path=/\r\nLocation: /echo\r\n";
                send(stream, "302 Found", headers, b"").await
            }
            "/no-location" => send(stream, "302 Found", "", b"").await,
            "/slow-head" => {
                tokio::time::sleep(Duration::from_secs(20)).await;
                Ok(())
            }
            "/slow-body" => {
                stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n").await?;
                for _ in 0..200 {
                    stream.write_all(b"x").await?;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Ok(())
            }
            other => match other.strip_prefix("/hops/").and_then(|n| n.parse::<u32>().ok()) {
                Some(0) => Box::pin(respond(stream, "/found", head, port)).await,
                // Alternate relative and absolute locations.
                Some(n) if n % 2 == 0 => {
                    let to = redirect(format!("/hops/{}", n - 1));
                    send(stream, "302 Found", &to, b"").await
                }
                Some(n) => {
                    let to = redirect(format!("http://127.0.0.1:{port}/hops/{}", n - 1));
                    send(stream, "303 See Other", &to, b"").await
                }
                None => send(stream, "404 Not Found", "", b"").await,
            },
        }
    }

    fn found(port: u16, path: &str) -> Result<FetchOutcome, LinkFetchError> {
        Ok(FetchOutcome::Found { final_url: format!("http://127.0.0.1:{port}{path}") })
    }

    #[test]
    fn public_and_non_public_addresses() {
        let public = [
            "8.8.8.8",
            "1.1.1.1",
            "93.184.216.34",
            "100.63.255.255",
            "100.128.0.1",
            "172.15.255.255",
            "172.32.0.1",
            "2606:4700:4700::1111",
            "2a00:1450:4001:82a::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ];
        for ip in public {
            assert!(is_public_ip(ip.parse().expect("ip")), "{ip} should be public");
        }
        let refused = [
            "127.0.0.1",
            "127.255.255.254",
            "0.0.0.0",
            "0.1.2.3",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "169.254.0.1",
            "100.64.0.1",
            "100.100.100.200",
            "192.0.0.192",
            "192.0.2.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "192.88.99.1",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "168.63.129.16",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "::8.8.8.8",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::1",
            "2002:7f00:1::1",
            "2002:a9fe:a9fe::",
            "2001::1",
            "2001:db8::1",
            "3fff::1",
            "fc00::1",
            "fd00::1",
            "fd00:ec2::254",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "100::1",
            "::ffff:0:7f00:1",
        ];
        for ip in refused {
            assert!(!is_public_ip(ip.parse().expect("ip")), "{ip} should be refused");
        }
    }

    #[test]
    fn numeric_hosts_are_normalised_to_addresses() {
        for (input, want) in [
            ("http://2130706433/", "127.0.0.1"),
            ("http://0x7f000001/", "127.0.0.1"),
            ("http://0x7f.1/", "127.0.0.1"),
            ("http://0177.0.0.1/", "127.0.0.1"),
            ("http://017700000001/", "127.0.0.1"),
            ("http://127.1/", "127.0.0.1"),
            ("http://0/", "0.0.0.0"),
            ("http://2852039166/", "169.254.169.254"),
            ("http://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1"),
        ] {
            let url = check_url(input).unwrap_or_else(|e| panic!("{input}: {e}"));
            let host = match url.host() {
                Some(Host::Ipv4(ip)) => IpAddr::V4(ip),
                Some(Host::Ipv6(ip)) => IpAddr::V6(ip),
                other => panic!("{input}: host {other:?}"),
            };
            assert_eq!(host, want.parse::<IpAddr>().expect("ip"), "{input}");
            assert!(!is_public_ip(host), "{input}");
        }
    }

    #[test]
    fn url_rules() {
        for (input, want) in [
            ("file:///etc/passwd", LinkFetchError::UnsupportedScheme("file:".into())),
            ("ftp://example.com/x", LinkFetchError::UnsupportedScheme("ftp:".into())),
            ("gopher://example.com/", LinkFetchError::UnsupportedScheme("gopher:".into())),
            ("javascript:alert(1)", LinkFetchError::UnsupportedScheme("javascript:".into())),
            ("data:text/html,hi", LinkFetchError::UnsupportedScheme("data:".into())),
            ("http://user:secret@example.com/", LinkFetchError::CredentialsInUrl),
            ("https://user@example.com/", LinkFetchError::CredentialsInUrl),
            ("https://:secret@example.com/", LinkFetchError::CredentialsInUrl),
        ] {
            assert_eq!(check_url(input), Err(want), "{input}");
        }
        for input in ["", "example.com/page", "http://", "http://exa mple.com/", "https://[::1/"] {
            assert!(matches!(check_url(input), Err(LinkFetchError::InvalidUrl(_))), "{input}");
        }
        let ok = check_url("HTTPS://Example.COM./a?b#c").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ok.host_str(), Some("example.com."));

        let base = Url::parse("https://example.com/a/b").expect("url");
        let next = redirect_target(&base, "../c?d").map(|u| u.to_string());
        assert_eq!(next.as_deref(), Ok("https://example.com/c?d"));
        let next = redirect_target(&base, "//other.example/x").map(|u| u.to_string());
        assert_eq!(next.as_deref(), Ok("https://other.example/x"));
        assert_eq!(redirect_target(&base, "http://u:p@example.com/"), Err(LinkFetchError::CredentialsInUrl));
        assert_eq!(
            redirect_target(&base, "file:///etc/passwd"),
            Err(LinkFetchError::UnsupportedScheme("file:".into()))
        );
    }

    #[tokio::test]
    async fn refused_targets() {
        // The per-hop gate alone: nothing here opens a connection.
        let targets = [
            "http://127.0.0.1/",
            "http://localhost/",
            "http://LOCALHOST.:8080/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::127.0.0.1]/",
            "http://0.0.0.0/",
            "http://10.0.0.1/",
            "http://172.16.5.4/",
            "http://192.168.1.1/",
            "http://169.254.169.254/latest/meta-data/",
            "http://100.64.0.1/",
            "http://[fd00::1]/",
            "http://[fd00:ec2::254]/",
            "http://[fe80::1]/",
            "http://[64:ff9b::a9fe:a9fe]/",
            "http://2130706433/",
            "http://0x7f.1/",
            "https://224.0.0.1/",
            "http://255.255.255.255/",
        ];
        for target in targets {
            let url = check_url(target).unwrap_or_else(|e| panic!("{target}: {e}"));
            let result = check_hop(&url, false).await;
            assert!(matches!(result, Err(LinkFetchError::RefusedAddress(_))), "{target}: {result:?}");
        }
        // `localhost` goes through the system resolver.
        let url = check_url("http://localhost/").expect("url");
        assert_eq!(
            check_hop(&url, false).await,
            Err(LinkFetchError::RefusedAddress(Ipv4Addr::LOCALHOST.into()))
        );
        assert!(check_hop(&url, true).await.is_ok());

        // A name with one public and one private address is refused as a whole.
        let dns = FakeDns::new(&[
            ("mixed.test", &["93.184.216.34", "10.0.0.7"]),
            ("rebind.test", &["::ffff:127.0.0.1"]),
            ("public.test", &["93.184.216.34", "2606:4700::1"]),
        ]);
        for (target, want) in [
            ("http://mixed.test/", Err(LinkFetchError::RefusedAddress("10.0.0.7".parse().expect("ip")))),
            (
                "http://rebind.test/",
                Err(LinkFetchError::RefusedAddress("::ffff:127.0.0.1".parse().expect("ip"))),
            ),
            ("http://nowhere.test/", Err(LinkFetchError::Resolve("nowhere.test".into()))),
        ] {
            let url = check_url(target).expect("url");
            assert_eq!(resolve_checked(&url, &dns, &is_public_ip).await, want, "{target}");
        }
        let url = check_url("https://public.test/").expect("url");
        let addrs = resolve_checked(&url, &dns, &is_public_ip).await.expect("public");
        assert_eq!(addrs.len(), 2);
        assert!(addrs.iter().all(|a| a.port() == 443));
    }

    #[tokio::test]
    async fn live_local_server_is_refused_without_allow_private() {
        let port = serve().await;
        let policy = FetchPolicy { ports: None, ..FetchPolicy::default() };
        for url in [
            format!("http://127.0.0.1:{port}/found"),
            format!("http://localhost:{port}/found"),
            format!("http://2130706433:{port}/found"),
            format!("http://[::ffff:127.0.0.1]:{port}/found"),
        ] {
            let result = fetch_contains(&url, NEEDLE, &policy).await;
            assert!(matches!(result, Err(LinkFetchError::RefusedAddress(_))), "{url}: {result:?}");
        }
        // The same page with the check lifted, to show the refusal was the check's doing.
        let url = format!("http://localhost:{port}/found");
        let result = fetch_contains(&url, NEEDLE, &local_policy()).await;
        assert_eq!(result, Ok(FetchOutcome::Found { final_url: format!("http://localhost:{port}/found") }));
    }

    #[tokio::test]
    async fn schemes_and_credentials_are_refused_before_any_network() {
        let policy = local_policy();
        for (url, want) in [
            ("file:///etc/passwd", LinkFetchError::UnsupportedScheme("file:".into())),
            ("ftp://127.0.0.1/", LinkFetchError::UnsupportedScheme("ftp:".into())),
            ("http://user:secret@127.0.0.1/", LinkFetchError::CredentialsInUrl),
        ] {
            let err = fetch_contains(url, NEEDLE, &policy).await.expect_err(url);
            assert_eq!(err, want);
            assert!(!err.to_string().contains("secret"));
        }
    }

    #[tokio::test]
    async fn found_not_found_and_limits() {
        let port = serve().await;
        let policy = local_policy();
        let base = format!("http://127.0.0.1:{port}");
        let fetch = |path: &str| {
            let url = format!("{base}{path}");
            let policy = policy.clone();
            async move { fetch_contains(&url, NEEDLE, &policy).await }
        };
        assert_eq!(fetch("/found").await, found(port, "/found"));
        assert_eq!(fetch("/notfound").await, Ok(FetchOutcome::NotFound));
        assert_eq!(fetch("/at-limit").await, found(port, "/at-limit"));
        assert_eq!(fetch("/beyond-limit").await, Ok(FetchOutcome::NotFound));
        assert_eq!(fetch("/straddle").await, found(port, "/straddle"));
        assert_eq!(fetch("/bytewise").await, found(port, "/bytewise"));
        assert_eq!(fetch("/longer").await, Ok(FetchOutcome::NotFound), "alice-bot's proof is not alice's");
        assert_eq!(
            fetch("/longer-split").await,
            Ok(FetchOutcome::NotFound),
            "the rest of the handle came later"
        );
        assert_eq!(fetch("/whole-split").await, found(port, "/whole-split"));
        assert_eq!(fetch("/missing").await, Err(LinkFetchError::Status(404)));
        assert_eq!(fetch("/error").await, Err(LinkFetchError::Status(500)));
        assert_eq!(
            fetch("/missing").await.map_err(|e| e.to_string()),
            Err("the server answered HTTP 404".into())
        );
    }

    #[tokio::test]
    async fn redirects_are_counted_and_rechecked() {
        let port = serve().await;
        let policy = local_policy();
        let url = |path: &str| format!("http://127.0.0.1:{port}{path}");
        assert_eq!(fetch_contains(&url("/hops/3"), NEEDLE, &policy).await, found(port, "/hops/0"));
        assert_eq!(
            fetch_contains(&url("/hops/4"), NEEDLE, &policy).await,
            Err(LinkFetchError::TooManyRedirects)
        );
        let no_redirects = FetchPolicy { max_redirects: 0, ..local_policy() };
        assert_eq!(
            fetch_contains(&url("/hops/1"), NEEDLE, &no_redirects).await,
            Err(LinkFetchError::TooManyRedirects)
        );
        assert_eq!(
            fetch_contains(&url("/no-location"), NEEDLE, &policy).await,
            Err(LinkFetchError::Status(302))
        );
        assert_eq!(
            fetch_contains(&url("/to-ftp"), NEEDLE, &policy).await,
            Err(LinkFetchError::UnsupportedScheme("ftp:".into()))
        );
        assert_eq!(
            fetch_contains(&url("/to-creds"), NEEDLE, &policy).await,
            Err(LinkFetchError::CredentialsInUrl)
        );
    }

    #[tokio::test]
    async fn redirect_to_metadata_is_refused() {
        let port = serve().await;
        // The first hop is our loopback server, allowed through a test gate that otherwise is
        // the production check: the second hop (169.254.169.254) must be refused, and so never
        // connected to.
        let policy = FetchPolicy { ports: None, ..FetchPolicy::default() };
        let dns = FakeDns::new(&[]);
        let url = format!("http://127.0.0.1:{port}/to-metadata");
        let result = fetch_with(&url, NEEDLE, &policy, &dns, &loopback_or_public).await;
        assert_eq!(result, Err(LinkFetchError::RefusedAddress("169.254.169.254".parse().expect("ip"))));
        let hop = check_url("http://169.254.169.254/latest/meta-data/").expect("url");
        assert!(matches!(check_hop(&hop, false).await, Err(LinkFetchError::RefusedAddress(_))));
    }

    #[tokio::test]
    async fn connection_is_pinned_to_the_checked_address() {
        let port = serve().await;
        let policy = local_policy();
        // Names no real resolver knows: the fetch can only work through the pinned addresses.
        let dns = FakeDns::new(&[("proof.test", &["127.0.0.1"]), ("second.test", &["127.0.0.1"])]);
        let url = format!("http://proof.test:{port}/echo");
        for needle in [format!("host: proof.test:{port}\r\n"), format!("user-agent: {USER_AGENT}\r\n")] {
            let result = fetch_with(&url, &needle, &policy, &dns, &|_| true).await;
            assert_eq!(result, Ok(FetchOutcome::Found { final_url: url.clone() }), "{needle:?}");
        }
        assert_eq!(dns.calls.load(Ordering::SeqCst), 2, "one lookup per fetch");

        // A redirect to another name is looked up (once) and pinned too.
        let url = format!("http://proof.test:{port}/to-name");
        let needle = format!("host: second.test:{port}\r\n");
        let result = fetch_with(&url, &needle, &policy, &dns, &|_| true).await;
        assert_eq!(result, Ok(FetchOutcome::Found { final_url: format!("http://second.test:{port}/echo") }));
        assert_eq!(dns.calls.load(Ordering::SeqCst), 4);
    }

    #[tokio::test]
    async fn cookies_are_not_kept() {
        let port = serve().await;
        let url = format!("http://127.0.0.1:{port}/cookie");
        for needle in ["session=secret", "ookie"] {
            assert_eq!(fetch_contains(&url, needle, &local_policy()).await, Ok(FetchOutcome::NotFound));
        }
        // The echo itself works: the request line is there.
        assert_eq!(fetch_contains(&url, "GET /echo HTTP/1.1", &local_policy()).await, found(port, "/echo"));
    }

    #[tokio::test]
    async fn slow_servers_time_out() {
        let port = serve().await;
        let policy = FetchPolicy { timeout: Duration::from_millis(400), ..local_policy() };
        for path in ["/slow-head", "/slow-body"] {
            let started = Instant::now();
            let url = format!("http://127.0.0.1:{port}{path}");
            assert_eq!(fetch_contains(&url, NEEDLE, &policy).await, Err(LinkFetchError::Timeout), "{path}");
            assert!(started.elapsed() < Duration::from_secs(3), "{path}");
        }
    }

    #[tokio::test]
    async fn connection_refused() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        drop(listener);
        let url = format!("http://127.0.0.1:{port}/");
        let err = fetch_contains(&url, NEEDLE, &local_policy()).await.expect_err("nothing listens");
        assert!(matches!(err, LinkFetchError::Connect(_)), "{err:?}");
        let text = err.to_string();
        assert!(text.starts_with("could not connect: "), "{text}");
        assert!(text.contains("refused"), "{text}");
        assert!(!text.contains('\n'), "{text}");
    }

    #[tokio::test]
    async fn the_production_policy_reaches_only_what_the_operator_lets_through() {
        let port = serve().await;
        let url = format!("http://127.0.0.1:{port}/found");
        let loopback: ipnet::IpNet = "127.0.0.0/8".parse().expect("net");
        let other: ipnet::IpNet = "10.0.0.0/8".parse().expect("net");
        let refused = Err(LinkFetchError::RefusedAddress(Ipv4Addr::LOCALHOST.into()));
        for (targets, expected) in [
            // The port rule holds too, and is checked first (it needs no lookup).
            (PrivateTargets::None, Err(LinkFetchError::RefusedPort(port))),
            (PrivateTargets::Only(vec![other]), refused),
            (PrivateTargets::Only(vec![loopback]), found(port, "/found")),
            (PrivateTargets::All, found(port, "/found")),
        ] {
            let policy = FetchPolicy::reaching(&targets);
            assert_eq!(fetch_contains(&url, NEEDLE, &policy).await, expected, "{targets:?}");
        }
    }

    #[test]
    fn the_port_rule_is_lifted_only_with_the_address_rule() {
        let net: ipnet::IpNet = "127.0.0.0/8".parse().expect("net");
        assert_eq!(FetchPolicy::reaching(&PrivateTargets::None).ports, Some(ALLOWED_PORTS.to_vec()));
        assert_eq!(FetchPolicy::default().ports, Some(ALLOWED_PORTS.to_vec()));
        assert_eq!(FetchPolicy::reaching(&PrivateTargets::All).ports, None);
        assert_eq!(FetchPolicy::reaching(&PrivateTargets::Only(vec![net])).ports, None);
        let policy = FetchPolicy::default();
        for ok in [
            "https://example.org/",
            "http://example.org/",
            "http://example.org:8080/",
            "http://example.org:443/",
            "https://[2001:db8::1]:8443/",
        ] {
            assert_eq!(check_port(&check_url(ok).expect("url"), &policy), Ok(()), "{ok}");
        }
        for (bad, port) in [("http://example.org:22/", 22), ("https://example.org:8081/", 8081)] {
            let checked = check_port(&check_url(bad).expect("url"), &policy);
            assert_eq!(checked, Err(LinkFetchError::RefusedPort(port)), "{bad}");
        }
        let text = LinkFetchError::RefusedPort(22).to_string();
        assert!(text.contains("port 22") && text.contains("80, 443, 8000, 8080 and 8443"), "{text}");
    }

    #[tokio::test]
    async fn every_hop_keeps_to_the_ports() {
        let port = serve().await;
        // The test server's own port stands for the web ports.
        let policy = FetchPolicy { ports: Some(vec![port]), ..local_policy() };
        let url = |path: &str| format!("http://127.0.0.1:{port}{path}");
        assert_eq!(fetch_contains(&url("/hops/2"), NEEDLE, &policy).await, found(port, "/hops/0"));
        assert_eq!(
            fetch_contains(&url("/to-port-22"), NEEDLE, &policy).await,
            Err(LinkFetchError::RefusedPort(22)),
            "a redirect to another port"
        );
        let answer = exchange(&url("/to-port-22"), &Request::get(), &policy, &Open).await;
        assert_eq!(answer.map(|a| a.status), Err(LinkFetchError::RefusedPort(22)), "an endpoint check's hop");
        let elsewhere = FetchPolicy { ports: Some(vec![80, 443]), ..local_policy() };
        assert_eq!(
            fetch_contains(&url("/found"), NEEDLE, &elsewhere).await,
            Err(LinkFetchError::RefusedPort(port)),
            "the first URL"
        );
    }

    /// Records the hops it admits and how many of them are held at once.
    #[derive(Default)]
    struct CountingGate {
        admitted: std::sync::Mutex<Vec<String>>,
        held: Arc<AtomicUsize>,
        most: Arc<AtomicUsize>,
        refuse: bool,
    }

    struct CountedHold(Arc<AtomicUsize>);

    impl Drop for CountedHold {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }

    impl HopGate for CountingGate {
        fn admit(&self, url: &Url, addrs: &[SocketAddr]) -> Result<Box<dyn Any + Send>, LinkFetchError> {
            assert!(!addrs.is_empty(), "the gate is given the checked addresses");
            self.admitted.lock().expect("lock").push(url.to_string());
            if self.refuse {
                return Err(LinkFetchError::HostBusy);
            }
            let now = self.held.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            Ok(Box::new(CountedHold(self.held.clone())))
        }
    }

    #[tokio::test]
    async fn every_hop_passes_the_gate_one_at_a_time() {
        let port = serve().await;
        let gate = CountingGate::default();
        let url = format!("http://127.0.0.1:{port}/hops/3");
        let answer = exchange(&url, &Request::get(), &local_policy(), &gate).await.expect("answer");
        assert_eq!(answer.status, 200);
        let admitted = gate.admitted.lock().expect("lock").clone();
        let want: Vec<String> = (0..=3).rev().map(|n| format!("http://127.0.0.1:{port}/hops/{n}")).collect();
        assert_eq!(admitted, want);
        assert_eq!(gate.most.load(Ordering::SeqCst), 1, "a hop is let go before the next is admitted");
        assert_eq!(gate.held.load(Ordering::SeqCst), 0, "and the last once its answer is read");

        let refusing = CountingGate { refuse: true, ..CountingGate::default() };
        let answer =
            exchange(&format!("http://127.0.0.1:{port}/found"), &Request::get(), &local_policy(), &refusing)
                .await;
        assert_eq!(answer.map(|a| a.status), Err(LinkFetchError::HostBusy));
    }
}
