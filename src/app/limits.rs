//! Rate limits. Every budget of an agent (calls, contact requests, replies, link proofs and
//! endpoint changes, profile edits) and the budgets of client addresses that guard against abuse
//! over hours (registrations, key recoveries) count events in SQLite, so neither a restart nor a
//! rename refills them. An agent's budgets are keyed by its id, never by its handle: a handle is
//! a name anyone may type, so nothing a stranger does with it can spend them. The short budgets
//! of client addresses (reports, API-key checks, refused registrations) live in memory in a
//! keyed GCRA limiter, so spending them costs no write.
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

use crate::error::{Error, RateRule, Result};
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
    /// Profile writes that change what the profile means (each one embedding of up to a few
    /// thousand characters, about a second of one core): enough to edit a profile by hand in
    /// many small steps, too few to keep a core busy.
    pub const PROFILE_EDITS: &str = "30/h";
    /// Collaboration proposals, each an event in the partner's inbox: more than the
    /// collaborations an agent finishes (and one proposer sends one partner at most
    /// `collab::PAIR_PROPOSALS_PER_WINDOW` of them a week).
    pub const COLLABS: &str = "30/d";
}

#[derive(Debug, Clone)]
pub struct RateSettings {
    /// Registrations per client IP; refused registrations (handle taken, reserved or held) are
    /// counted at the same rate in a budget of their own.
    pub registration: Rate,
    pub calls: Rate,
    pub replies: Rate,
    pub requests: Rate,
    /// Link proofs and endpoint changes, per agent.
    pub links: Rate,
    pub reports: Rate,
    /// Failed API-key checks (a wrong secret for an existing key id) per client IP.
    pub key_checks: Rate,
    /// Key recoveries started, per client IP.
    pub recovery: Rate,
    /// Profile writes that change the profile's embedded text, per agent.
    pub profile_edits: Rate,
    /// Collaboration proposals, per proposer.
    pub collabs: Rate,
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
            profile_edits: r(defaults::PROFILE_EDITS),
            collabs: r(defaults::COLLABS),
        }
    }
}

/// Limits counted in SQLite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Persistent {
    /// Registrations written, per client address.
    Registration,
    /// Key recoveries started from one client address (never per handle: whoever starts
    /// recoveries of a handle must not be able to refuse its owner's).
    Recovery,
    /// Calls posted, per agent.
    Calls,
    /// Contact requests sent, per agent.
    Requests,
    /// Replies written, per agent.
    Replies,
    /// Link proofs tried and endpoint lists set (each sends the directory fetching), per agent.
    Links,
    /// Profile writes that change the profile's embedded text (each costs an embedding), per
    /// agent.
    ProfileEdits,
    /// Collaboration proposals sent, per agent.
    Collabs,
}

/// Whom a limit counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountedBy {
    /// The client address ([`ip_subject`]).
    Client,
    /// The agent's id ([`agent_subject`]): the same across renames, never a handle.
    Agent,
}

/// Limits counted in memory, per client address.
#[derive(Debug, Clone, Copy)]
pub enum InMemory {
    Reports,
    KeyChecks,
    /// Registrations refused because the handle is taken, reserved or held.
    RefusedRegistrations,
}

impl Persistent {
    pub const ALL: [Persistent; 8] = [
        Persistent::Registration,
        Persistent::Recovery,
        Persistent::Calls,
        Persistent::Requests,
        Persistent::Replies,
        Persistent::Links,
        Persistent::ProfileEdits,
        Persistent::Collabs,
    ];

    /// The name in `rate_events` and in the `limit` label of the 429 counter.
    fn name(self) -> &'static str {
        match self {
            Persistent::Registration => "registration",
            Persistent::Recovery => "recovery_by_address",
            Persistent::Calls => "calls",
            Persistent::Requests => "requests",
            Persistent::Replies => "replies",
            Persistent::Links => "links",
            Persistent::ProfileEdits => "profile_edits",
            Persistent::Collabs => "collabs",
        }
    }

    /// How a refusal by this limit names it.
    fn rule(self) -> RateRule {
        match self {
            Persistent::Registration => RateRule::Registrations,
            Persistent::Recovery => RateRule::Recoveries,
            Persistent::Calls => RateRule::Calls,
            Persistent::Requests => RateRule::Requests,
            Persistent::Replies => RateRule::Replies,
            Persistent::Links => RateRule::Links,
            Persistent::ProfileEdits => RateRule::ProfileEdits,
            Persistent::Collabs => RateRule::Collabs,
        }
    }

    pub fn counted_by(self) -> CountedBy {
        match self {
            Persistent::Registration | Persistent::Recovery => CountedBy::Client,
            Persistent::Calls
            | Persistent::Requests
            | Persistent::Replies
            | Persistent::Links
            | Persistent::ProfileEdits
            | Persistent::Collabs => CountedBy::Agent,
        }
    }
}

impl InMemory {
    fn name(self) -> &'static str {
        match self {
            InMemory::Reports => "reports",
            InMemory::KeyChecks => "key_checks",
            InMemory::RefusedRegistrations => "refused_registrations",
        }
    }

    /// How a refusal by this limit names it.
    fn rule(self) -> RateRule {
        match self {
            InMemory::Reports => RateRule::Reports,
            InMemory::KeyChecks => RateRule::KeyChecks,
            InMemory::RefusedRegistrations => RateRule::RefusedRegistrations,
        }
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

/// The subject an agent's limits count: its row id (`migrations/0011_budgets_by_agent.sql`
/// moved the events counted by handle before). It never changes while the agent exists; the
/// events go with the agent when it is erased, before the id can be used again.
pub fn agent_subject(agent_id: i64) -> String {
    format!("agent:{agent_id}")
}

/// An in-memory budget per client address whose exhaustion is remembered until it refills, so
/// what comes after it is refused before any work.
struct Budget {
    limit: InMemory,
    limiter: DefaultKeyedRateLimiter<String>,
    spent_until: Mutex<HashMap<String, Instant>>,
}

impl Budget {
    fn new(limit: InMemory, rate: Rate) -> Self {
        Budget { limit, limiter: keyed(rate), spent_until: Mutex::new(HashMap::new()) }
    }

    /// Refuses a client whose budget is spent, without taking anything.
    fn allowed(&self, client_ip: &str) -> Result<()> {
        let subject = ip_subject(client_ip);
        let mut spent = self.spent_until.lock().unwrap_or_else(|e| e.into_inner());
        match spent.get(&subject) {
            Some(until) if *until > Instant::now() => {
                telemetry::rate_limited(self.limit.name());
                let retry_after = retry_after_secs(*until - Instant::now());
                Err(Error::RateLimited { retry_after, rule: self.limit.rule() })
            }
            Some(_) => {
                spent.remove(&subject);
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Takes one unit; once none is left, refuses with the wait and remembers it.
    fn take(&self, client_ip: &str) -> Result<()> {
        let subject = ip_subject(client_ip);
        self.limiter.check_key(&subject).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            self.spent_until.lock().unwrap_or_else(|e| e.into_inner()).insert(subject, Instant::now() + wait);
            telemetry::rate_limited(self.limit.name());
            Error::RateLimited { retry_after: retry_after_secs(wait), rule: self.limit.rule() }
        })
    }

    fn shrink(&self) {
        self.limiter.retain_recent();
        let now = Instant::now();
        self.spent_until.lock().unwrap_or_else(|e| e.into_inner()).retain(|_, until| *until > now);
    }
}

pub struct RateLimits {
    settings: RateSettings,
    reports: DefaultKeyedRateLimiter<String>,
    key_checks: Budget,
    refused_registrations: Budget,
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
            reports: keyed(settings.reports),
            key_checks: Budget::new(InMemory::KeyChecks, settings.key_checks),
            refused_registrations: Budget::new(InMemory::RefusedRegistrations, settings.registration),
            settings: settings.clone(),
        }
    }

    /// Refuses a key check from a client whose failed key checks used up the key-check budget,
    /// so a flood of wrong secrets costs no argon2 run past the budget.
    pub fn key_check_allowed(&self, client_ip: &str) -> Result<()> {
        self.key_checks.allowed(client_ip)
    }

    /// Counts one failed key check (a wrong secret for an existing key id); refuses with 429
    /// once the client's budget is used up.
    pub fn key_check_failed(&self, client_ip: &str) -> Result<()> {
        self.key_checks.take(client_ip)
    }

    /// Refuses every registration from a client whose refused registrations used up their
    /// budget, before anything else is looked at.
    pub fn registration_allowed(&self, client_ip: &str) -> Result<()> {
        self.refused_registrations.allowed(client_ip)
    }

    /// What a registration refused for `why` answers: `why` itself when it is not a refusal of
    /// the handle; otherwise it spends one unit of the client's budget of refused registrations
    /// (in memory: a refusal writes nothing), and once that is used up, 429.
    pub fn registration_refused(&self, client_ip: &str, why: Error) -> Error {
        match why {
            Error::HandleTaken | Error::HandleReserved => match self.refused_registrations.take(client_ip) {
                Ok(()) => why,
                Err(limited) => limited,
            },
            other => other,
        }
    }

    fn rate(&self, limit: Persistent) -> Rate {
        match limit {
            Persistent::Registration => self.settings.registration,
            Persistent::Recovery => self.settings.recovery,
            Persistent::Calls => self.settings.calls,
            Persistent::Requests => self.settings.requests,
            Persistent::Replies => self.settings.replies,
            Persistent::Links => self.settings.links,
            Persistent::ProfileEdits => self.settings.profile_edits,
            Persistent::Collabs => self.settings.collabs,
        }
    }

    /// Refuses when the client `client_ip` used up `limit` (one counted by client) within its
    /// window. Call inside the write transaction that then `record`s the event, so concurrent
    /// requests cannot both slip in (and before, on a read connection, to refuse ahead of
    /// expensive work).
    pub fn check(&self, conn: &Connection, limit: Persistent, client_ip: &str, now: i64) -> Result<()> {
        debug_assert_eq!(limit.counted_by(), CountedBy::Client, "{limit:?} is counted by agent");
        self.check_subject(conn, limit, &ip_subject(client_ip), now)
    }

    pub fn record(&self, conn: &Connection, limit: Persistent, client_ip: &str, now: i64) -> Result<()> {
        debug_assert_eq!(limit.counted_by(), CountedBy::Client, "{limit:?} is counted by agent");
        rate::record(conn, limit.name(), &ip_subject(client_ip), now)
    }

    /// [`RateLimits::check`] for a limit counted by agent.
    pub fn check_agent(&self, conn: &Connection, limit: Persistent, agent_id: i64, now: i64) -> Result<()> {
        debug_assert_eq!(limit.counted_by(), CountedBy::Agent, "{limit:?} is counted by client");
        self.check_subject(conn, limit, &agent_subject(agent_id), now)
    }

    /// [`RateLimits::record`] for a limit counted by agent.
    pub fn record_agent(&self, conn: &Connection, limit: Persistent, agent_id: i64, now: i64) -> Result<()> {
        debug_assert_eq!(limit.counted_by(), CountedBy::Agent, "{limit:?} is counted by client");
        rate::record(conn, limit.name(), &agent_subject(agent_id), now)
    }

    /// Checks and records one event of an agent's `limit` (inside a write transaction).
    pub fn spend_agent(&self, conn: &Connection, limit: Persistent, agent_id: i64, now: i64) -> Result<()> {
        self.check_agent(conn, limit, agent_id, now)?;
        self.record_agent(conn, limit, agent_id, now)
    }

    /// Whether the agent's `limit` has room for one more event now, counting nothing: for a
    /// look ahead of a write that may not spend it (an endpoint check that finds nothing new).
    pub fn allows_agent(
        &self,
        conn: &Connection,
        limit: Persistent,
        agent_id: i64,
        now: i64,
    ) -> Result<bool> {
        Ok(self.wait(conn, limit, &agent_subject(agent_id), now)?.is_none())
    }

    fn check_subject(&self, conn: &Connection, limit: Persistent, subject: &str, now: i64) -> Result<()> {
        match self.wait(conn, limit, subject, now)? {
            None => Ok(()),
            Some(retry_after) => {
                telemetry::rate_limited(limit.name());
                Err(Error::RateLimited { retry_after, rule: limit.rule() })
            }
        }
    }

    /// The seconds until `subject`'s `limit` has room again, or `None` when it has room now.
    fn wait(&self, conn: &Connection, limit: Persistent, subject: &str, now: i64) -> Result<Option<u64>> {
        let rate = self.rate(limit);
        let since = now - rate.window_ms;
        let (count, _) = rate::count_since(conn, limit.name(), subject, since)?;
        if count < rate.count as u64 {
            return Ok(None);
        }
        // A slot frees when the event `count` places back leaves the window.
        let freeing = rate::nth_newest_since(conn, limit.name(), subject, since, rate.count as u64)?;
        Ok(Some(seconds_until(freeing.unwrap_or(now) + rate.window_ms, now)))
    }

    /// Takes one token of an in-memory limit of client `client_ip`, or refuses with the wait.
    pub fn take(&self, limit: InMemory, client_ip: &str) -> Result<()> {
        let limiter = match limit {
            InMemory::Reports => &self.reports,
            InMemory::KeyChecks => return self.key_checks.take(client_ip),
            InMemory::RefusedRegistrations => return self.refused_registrations.take(client_ip),
        };
        limiter.check_key(&ip_subject(client_ip)).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            telemetry::rate_limited(limit.name());
            Error::RateLimited { retry_after: retry_after_secs(wait), rule: limit.rule() }
        })
    }

    /// How far back any SQLite-counted window looks.
    pub fn longest_window_ms(&self) -> i64 {
        Persistent::ALL.iter().map(|l| self.rate(*l).window_ms).max().unwrap_or(86_400 * SECOND)
    }

    /// Drops memory of keys that are back to a full quota.
    pub fn shrink(&self) {
        self.reports.retain_recent();
        self.key_checks.shrink();
        self.refused_registrations.shrink();
    }
}

/// Whole seconds to wait, rounded up, at least one.
fn retry_after_secs(wait: Duration) -> u64 {
    wait.as_secs() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events counted by handle before `0011_budgets_by_agent.sql` count for the agent that
    /// holds the handle, under the subject [`agent_subject`] writes; the others stay as they were.
    #[test]
    fn the_migration_moves_events_counted_by_handle_to_the_agents_id() {
        let conn = Connection::open_in_memory().expect("an in-memory database");
        conn.execute_batch(
            "CREATE TABLE agents (id INTEGER PRIMARY KEY, handle TEXT NOT NULL UNIQUE);
             CREATE TABLE rate_events (name TEXT NOT NULL, subject TEXT NOT NULL, at INTEGER NOT NULL);
             INSERT INTO agents (id, handle) VALUES (7, 'alice');
             INSERT INTO rate_events (name, subject, at) VALUES
                 ('calls', 'alice', 1), ('requests', 'alice', 2), ('registration', '127.0.0.1', 3),
                 ('calls', 'gone', 4);",
        )
        .expect("the schema before");
        conn.execute_batch(include_str!("../../migrations/0011_budgets_by_agent.sql"))
            .expect("the migration");
        let one_a_day = "1/d".parse().expect("a rate");
        let limits = RateLimits::new(&RateSettings {
            calls: one_a_day,
            requests: one_a_day,
            registration: one_a_day,
            ..RateSettings::default()
        });
        for limit in [Persistent::Calls, Persistent::Requests] {
            assert!(
                matches!(limits.check_agent(&conn, limit, 7, 10), Err(Error::RateLimited { .. })),
                "{limit:?}"
            );
        }
        assert!(limits.check(&conn, Persistent::Registration, "127.0.0.1", 10).is_err());
        assert_eq!(rate::count_since(&conn, "calls", "gone", 0).expect("a count").0, 1);
        assert_eq!(rate::count_since(&conn, "calls", "alice", 0).expect("a count").0, 0);
    }
}
