//! Rate limits. Those that guard against abuse over hours (registrations, calls, contact
//! requests) count events in SQLite, so a restart does not reset them; the short ones (replies,
//! link proofs, reports, API-key checks) live in memory in a keyed GCRA limiter.
//!
//! Limits keyed by client IP count an IPv6 client by its /64: one host usually holds a whole
//! /64, and counting single addresses would let it rotate through them.

use std::collections::HashMap;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::str::FromStr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use rusqlite::Connection;

use crate::error::{Error, Result};
use crate::store::rate;
use crate::telemetry;
use crate::time::{SECOND, seconds_until};

/// `N` events per window, written `N/s`, `N/m`, `N/h` or `N/d`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub count: u32,
    pub window_ms: i64,
}

impl FromStr for Rate {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        let bad = || format!("`{s}` is not a rate such as 10/h (units: s, m, h, d)");
        let (n, unit) = s.trim().split_once('/').ok_or_else(bad)?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        let window_ms = match unit.trim() {
            "s" => SECOND,
            "m" => 60 * SECOND,
            "h" => 3_600 * SECOND,
            "d" => 86_400 * SECOND,
            _ => return Err(bad()),
        };
        if count == 0 {
            return Err(bad());
        }
        Ok(Rate { count, window_ms })
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let unit = match self.window_ms / SECOND {
            1 => "s",
            60 => "m",
            3_600 => "h",
            _ => "d",
        };
        write!(f, "{}/{unit}", self.count)
    }
}

/// The default of each limit, as `--rate-limit-*` reads it (the one place they are written).
pub mod defaults {
    pub const REGISTRATION: &str = "10/h";
    pub const CALLS: &str = "20/d";
    pub const REPLIES: &str = "120/h";
    pub const REQUESTS: &str = "30/d";
    pub const LINKS: &str = "10/h";
    pub const REPORTS: &str = "20/h";
    pub const KEY_CHECKS: &str = "120/m";
    pub const RECOVERY: &str = "5/h";
}

#[derive(Debug, Clone)]
pub struct RateSettings {
    pub registration: Rate,
    pub calls: Rate,
    pub replies: Rate,
    pub requests: Rate,
    pub links: Rate,
    pub reports: Rate,
    /// Failed API-key checks (a wrong secret for an existing key id) per client IP.
    pub key_checks: Rate,
    /// Key recoveries started, per handle and per client IP.
    pub recovery: Rate,
}

impl Default for RateSettings {
    fn default() -> Self {
        let r = |s: &str| s.parse().expect("a default rate is well-formed");
        RateSettings {
            registration: r(defaults::REGISTRATION),
            calls: r(defaults::CALLS),
            replies: r(defaults::REPLIES),
            requests: r(defaults::REQUESTS),
            links: r(defaults::LINKS),
            reports: r(defaults::REPORTS),
            key_checks: r(defaults::KEY_CHECKS),
            recovery: r(defaults::RECOVERY),
        }
    }
}

/// Limits counted in SQLite.
#[derive(Debug, Clone, Copy)]
pub enum Persistent {
    Registration,
    Calls,
    Requests,
    /// Key recoveries started from one client address (never per handle: whoever starts
    /// recoveries of a handle must not be able to refuse its owner's).
    Recovery,
}

/// Limits counted in memory.
#[derive(Debug, Clone, Copy)]
pub enum InMemory {
    Replies,
    Links,
    Reports,
    KeyChecks,
}

impl Persistent {
    fn name(self) -> &'static str {
        match self {
            Persistent::Registration => "registration",
            Persistent::Calls => "calls",
            Persistent::Requests => "requests",
            Persistent::Recovery => "recovery_by_address",
        }
    }

    fn by_ip(self) -> bool {
        matches!(self, Persistent::Registration | Persistent::Recovery)
    }
}

impl InMemory {
    fn name(self) -> &'static str {
        match self {
            InMemory::Replies => "replies",
            InMemory::Links => "links",
            InMemory::Reports => "reports",
            InMemory::KeyChecks => "key_checks",
        }
    }

    fn by_ip(self) -> bool {
        matches!(self, InMemory::Reports | InMemory::KeyChecks)
    }
}

/// The client an address stands for, wherever clients are counted (rate limits, connections):
/// the address itself, or the /64 of an IPv6 address.
pub fn client_of(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6(std::net::Ipv6Addr::from(u128::from(v6) & (u128::MAX << 64))),
        v4 => v4,
    }
}

/// The subject an IP-keyed limit counts: [`client_of`] the address, an IPv6 one written as its
/// /64. Anything that does not parse is counted as given.
pub fn ip_subject(ip: &str) -> String {
    match ip.parse::<IpAddr>().map(client_of) {
        Ok(IpAddr::V6(v6)) => {
            let s = v6.segments();
            format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
        }
        Ok(v4) => v4.to_string(),
        Err(_) => ip.to_owned(),
    }
}

pub struct RateLimits {
    settings: RateSettings,
    replies: DefaultKeyedRateLimiter<String>,
    links: DefaultKeyedRateLimiter<String>,
    reports: DefaultKeyedRateLimiter<String>,
    key_checks: DefaultKeyedRateLimiter<String>,
    /// Clients whose failed key checks used up their budget, and until when: their next
    /// checks are refused before any hashing.
    key_checks_refused: Mutex<HashMap<String, Instant>>,
}

fn keyed(rate: Rate) -> DefaultKeyedRateLimiter<String> {
    let count = NonZeroU32::new(rate.count).unwrap_or(NonZeroU32::MIN);
    let period = Duration::from_millis((rate.window_ms as u64 / rate.count as u64).max(1));
    let quota = Quota::with_period(period).unwrap_or_else(|| Quota::per_second(count)).allow_burst(count);
    RateLimiter::keyed(quota)
}

impl RateLimits {
    pub fn new(settings: &RateSettings) -> Self {
        RateLimits {
            replies: keyed(settings.replies),
            links: keyed(settings.links),
            reports: keyed(settings.reports),
            key_checks: keyed(settings.key_checks),
            key_checks_refused: Mutex::new(HashMap::new()),
            settings: settings.clone(),
        }
    }

    /// Refuses a key check from a client whose failed checks used up the key-check budget, so
    /// a flood of wrong secrets costs no argon2 run past the budget.
    pub fn key_check_allowed(&self, client_ip: &str) -> Result<()> {
        let subject = ip_subject(client_ip);
        let mut refused = self.key_checks_refused.lock().unwrap_or_else(|e| e.into_inner());
        match refused.get(&subject) {
            Some(until) if *until > Instant::now() => {
                telemetry::rate_limited(InMemory::KeyChecks.name());
                Err(Error::RateLimited { retry_after: retry_after_secs(*until - Instant::now()) })
            }
            Some(_) => {
                refused.remove(&subject);
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Counts one failed key check (a wrong secret for an existing key id); refuses with 429
    /// once the client's budget is used up.
    pub fn key_check_failed(&self, client_ip: &str) -> Result<()> {
        let subject = ip_subject(client_ip);
        self.key_checks.check_key(&subject).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            self.key_checks_refused
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(subject, Instant::now() + wait);
            telemetry::rate_limited(InMemory::KeyChecks.name());
            Error::RateLimited { retry_after: retry_after_secs(wait) }
        })
    }

    fn rate(&self, limit: Persistent) -> Rate {
        match limit {
            Persistent::Registration => self.settings.registration,
            Persistent::Calls => self.settings.calls,
            Persistent::Requests => self.settings.requests,
            Persistent::Recovery => self.settings.recovery,
        }
    }

    /// Refuses when `subject` used up `limit` within its window. Call inside the write
    /// transaction that then `record`s the event, so concurrent requests cannot both slip in.
    pub fn check(&self, conn: &Connection, limit: Persistent, subject: &str, now: i64) -> Result<()> {
        let subject = if limit.by_ip() { ip_subject(subject) } else { subject.to_owned() };
        let rate = self.rate(limit);
        let since = now - rate.window_ms;
        let (count, _) = rate::count_since(conn, limit.name(), &subject, since)?;
        if count < rate.count as u64 {
            return Ok(());
        }
        // A slot frees when the event `count` places back leaves the window.
        let freeing = rate::nth_newest_since(conn, limit.name(), &subject, since, rate.count as u64)?;
        let retry_after = seconds_until(freeing.unwrap_or(now) + rate.window_ms, now);
        telemetry::rate_limited(limit.name());
        Err(Error::RateLimited { retry_after })
    }

    pub fn record(&self, conn: &Connection, limit: Persistent, subject: &str, now: i64) -> Result<()> {
        let subject = if limit.by_ip() { ip_subject(subject) } else { subject.to_owned() };
        rate::record(conn, limit.name(), &subject, now)
    }

    /// Takes one token of an in-memory limit, or refuses with the wait.
    pub fn take(&self, limit: InMemory, subject: &str) -> Result<()> {
        let limiter = match limit {
            InMemory::Replies => &self.replies,
            InMemory::Links => &self.links,
            InMemory::Reports => &self.reports,
            InMemory::KeyChecks => &self.key_checks,
        };
        let subject = if limit.by_ip() { ip_subject(subject) } else { subject.to_owned() };
        limiter.check_key(&subject).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            telemetry::rate_limited(limit.name());
            Error::RateLimited { retry_after: retry_after_secs(wait) }
        })
    }

    /// How far back any SQLite-counted window looks.
    pub fn longest_window_ms(&self) -> i64 {
        [self.settings.registration, self.settings.calls, self.settings.requests, self.settings.recovery]
            .iter()
            .map(|r| r.window_ms)
            .max()
            .unwrap_or(86_400 * SECOND)
    }

    /// Drops memory of keys that are back to a full quota.
    pub fn shrink(&self) {
        self.replies.retain_recent();
        self.links.retain_recent();
        self.reports.retain_recent();
        self.key_checks.retain_recent();
        let now = Instant::now();
        self.key_checks_refused.lock().unwrap_or_else(|e| e.into_inner()).retain(|_, until| *until > now);
    }
}

/// Whole seconds to wait, rounded up, at least one.
fn retry_after_secs(wait: Duration) -> u64 {
    wait.as_secs() + 1
}
