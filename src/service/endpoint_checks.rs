//! When endpoints are checked: at once when they are set, then again every interval (jittered),
//! a few at a time, never two at once against one host. A host is its registrable domain and
//! every address it resolves to; the rule holds for every hop a check makes, redirects included.
//!
//! Waiting for a host never takes a place another check could use: the schedule starts only
//! checks whose own host is free (and whose other hosts, learned by an earlier attempt, are free
//! too), so the endpoints of one busy host wait on the schedule while unrelated ones run. A check
//! that finds a host busy only on the way (an address its name now resolves to, a redirect to
//! another host) gives way at once: nothing is recorded, and it starts again when that host is
//! free, holding what it learned.
//!
//! What a check finds is written only when it differs from what the card shows, so the
//! schedule never churns the change log, the caches or the replicas; the times of checks live
//! in memory and in `/metrics` (the operator's view), not in the database. Endpoints of deleted
//! or suspended agents are not checked.
//!
//! Only a primary runs the schedule (`service::background` starts it there): a replica cannot write,
//! and its copy shows what the primary's checks found.

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use url::Url;

use super::App;
use super::events::tell;
use crate::app::limits::Persistent;
use crate::checks::endpoint_probe;
use crate::checks::link_fetch::{HopGate, LinkFetchError};
use crate::domain::endpoint::{CHECK_JITTER, CHECKS_AT_ONCE, Finding};
use crate::domain::events::{EventDetail, EventKind, SubjectKind};
use crate::store::endpoints::{self as store, Listing, Target};
use crate::telemetry;
use crate::time::now_ms;

/// Times in a row a check may give way to another on a host it reaches before it waits for its
/// next interval instead (the card keeps what it shows): a host kept busy cannot make one
/// endpoint's check start over and over.
const GIVE_WAY_AT_MOST: u32 = 8;

/// Runs the schedule until the task is dropped.
pub async fn run(app: App, interval: Duration) {
    let mut schedule = match app.blocking(|app| store::all_targets(&*app.read()?)).await {
        Ok(targets) => Schedule::starting(targets, interval),
        Err(e) => {
            tracing::error!(error = %e, "endpoint checks: cannot read the endpoints; checks run only as they are set");
            Schedule::starting(Vec::new(), interval)
        }
    };
    let busy = Arc::new(Busy::default());
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<(Target, Outcome)>();
    loop {
        for t in app.checks.take() {
            schedule.asked(t);
        }
        for (target, pass) in schedule.start(Instant::now(), &busy, CHECKS_AT_ONCE) {
            let (app, done) = (app.clone(), done_tx.clone());
            tokio::spawn(async move {
                let outcome = check_one(&app, &target, pass).await;
                let _ = done.send((target, outcome));
            });
        }
        telemetry::endpoints_scheduled(schedule.due.len() + schedule.in_flight.len());
        // Checks due now that could not start wait for one under way to end (a place, a host).
        let sleep = schedule
            .next_wake(Instant::now())
            .map_or(Duration::from_secs(3600), |at| at.saturating_duration_since(Instant::now()));
        tokio::select! {
            _ = app.checks.woken() => {}
            Some((target, outcome)) = done_rx.recv() => schedule.finished(target, outcome, Instant::now()),
            _ = tokio::time::sleep(sleep) => {}
        }
    }
}

/// What became of a check.
#[derive(Debug)]
enum Outcome {
    /// Checked (what it found is recorded): the hosts it reached.
    Checked(Reaches),
    /// It found a host busy on the way and gave way: the hosts it reached or wanted.
    GaveWay(Reaches),
    /// Its agent is deleted or suspended: nothing was fetched.
    Hidden,
    /// No longer listed: it leaves the schedule.
    Gone,
    /// The database did not answer: tried again next interval.
    Unread,
}

/// The hosts (as keys of `Busy`) one endpoint's check reaches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Reaches {
    /// Its own host's: held from the start of its next check to its end.
    own: Vec<String>,
    /// Other hosts' (redirects): its next check starts only while they are free, and holds each
    /// only while talking to it.
    hops: Vec<String>,
}

/// The next check of every endpoint, and the checks under way.
struct Schedule {
    interval: Duration,
    due: HashMap<Target, Instant>,
    /// Checks under way, with when each was due (one that gives way keeps its place).
    in_flight: HashMap<Target, Instant>,
    /// Set again while its check was running: checked again once it finishes.
    again: HashSet<Target>,
    /// What the last attempt of each endpoint's check learned of the hosts it reaches.
    reaches: HashMap<Target, Reaches>,
    /// Times in a row each endpoint's check gave way.
    gave_way: HashMap<Target, u32>,
}

impl Schedule {
    /// A starting server checks what was never checked at once and spreads the others over
    /// one interval, so a restart does not check everything at the same moment.
    fn starting(targets: Vec<(Target, bool)>, interval: Duration) -> Schedule {
        let now = Instant::now();
        let due = targets
            .into_iter()
            .map(|(t, checked)| {
                let at = if checked { now + interval.mul_f64(rand::random::<f64>()) } else { now };
                (t, at)
            })
            .collect();
        Schedule {
            interval,
            due,
            in_flight: HashMap::new(),
            again: HashSet::new(),
            reaches: HashMap::new(),
            gave_way: HashMap::new(),
        }
    }

    fn asked(&mut self, t: Target) {
        if self.in_flight.contains_key(&t) {
            self.again.insert(t);
        } else {
            self.due.insert(t, Instant::now());
        }
    }

    /// Starts checks that are due, earliest first, while fewer than `at_most` run: each holds
    /// its own host at once; one whose host is busy stays due and takes no place.
    fn start(&mut self, now: Instant, busy: &Arc<Busy>, at_most: usize) -> Vec<(Target, Pass)> {
        let room = at_most.saturating_sub(self.in_flight.len());
        if room == 0 {
            return Vec::new();
        }
        let mut ready: Vec<(Instant, Target)> =
            self.due.iter().filter(|(_, at)| **at <= now).map(|(t, at)| (*at, t.clone())).collect();
        ready.sort_by_key(|(at, _)| *at);
        let mut started = Vec::new();
        // The hosts of redirects of the checks started here: not free for another started in
        // the same breath, which would hold them before the first got there.
        let mut claimed: HashSet<String> = HashSet::new();
        for (at, target) in ready {
            if started.len() == room {
                break;
            }
            let known = self.reaches.get(&target);
            let (hold, free) = Pass::keys(&target, known);
            if hold.iter().chain(&free).any(|k| claimed.contains(k)) {
                continue;
            }
            let Some(pass) = Pass::take(busy, &target, hold, &free) else { continue };
            claimed.extend(free);
            self.due.remove(&target);
            self.in_flight.insert(target.clone(), at);
            started.push((target, pass));
        }
        started
    }

    /// The next time a check falls due. Checks due already that did not start wait for a
    /// check under way to end, not for a time.
    fn next_wake(&self, now: Instant) -> Option<Instant> {
        self.due.values().filter(|at| **at > now).min().copied()
    }

    fn next_interval(&self, now: Instant) -> Instant {
        let jitter = 1.0 + CHECK_JITTER * (2.0 * rand::random::<f64>() - 1.0);
        now + self.interval.mul_f64(jitter)
    }

    fn finished(&mut self, t: Target, outcome: Outcome, now: Instant) {
        let was_due = self.in_flight.remove(&t).unwrap_or(now);
        let again = self.again.remove(&t);
        let next = match outcome {
            Outcome::Gone if !again => {
                self.reaches.remove(&t);
                self.gave_way.remove(&t);
                return;
            }
            Outcome::GaveWay(reaches) => {
                self.reaches.insert(t.clone(), reaches);
                let times = self.gave_way.entry(t.clone()).or_default();
                *times += 1;
                if *times >= GIVE_WAY_AT_MOST {
                    *times = 0;
                    self.next_interval(now)
                } else {
                    was_due
                }
            }
            Outcome::Checked(reaches) => {
                self.reaches.insert(t.clone(), reaches);
                self.gave_way.remove(&t);
                self.next_interval(now)
            }
            Outcome::Gone | Outcome::Hidden | Outcome::Unread => self.next_interval(now),
        };
        self.due.insert(t, if again { now } else { next });
    }
}

/// The hosts being talked to right now, as keys: `domain:<registrable domain>` (or the address a
/// URL names) and `ip:<address>`.
#[derive(Default)]
struct Busy {
    keys: Mutex<HashSet<String>>,
}

impl Busy {
    fn lock(&self) -> MutexGuard<'_, HashSet<String>> {
        self.keys.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Holds `hold` if none of it, and none of `free`, is held already.
    fn try_hold(&self, hold: &[String], free: &[String]) -> bool {
        let mut keys = self.lock();
        if hold.iter().chain(free).any(|k| keys.contains(k)) {
            return false;
        }
        keys.extend(hold.iter().cloned());
        true
    }

    fn release<'a>(&self, held: impl Iterator<Item = &'a String>) {
        let mut keys = self.lock();
        for k in held {
            keys.remove(k);
        }
    }
}

/// Keys held for one hop of a check; released when the hop is done.
struct HopHeld {
    busy: Arc<Busy>,
    keys: Vec<String>,
}

impl Drop for HopHeld {
    fn drop(&mut self) {
        self.busy.release(self.keys.iter());
    }
}

/// One check's turn: its own host, held from its start to its end, and the gate each of its
/// hops passes. Dropping it frees the host.
struct Pass {
    busy: Arc<Busy>,
    /// The endpoint's own host name (as a URL writes it).
    host: Option<String>,
    state: Mutex<PassState>,
}

#[derive(Default)]
struct PassState {
    /// Held until the pass is dropped.
    held: HashSet<String>,
    reaches: Reaches,
    gave_way: bool,
}

impl Pass {
    /// What a check of `target` holds from its start (its own host, with what an earlier
    /// attempt learned of it), and what must be free for it to start (the other hosts it
    /// reached).
    fn keys(target: &Target, known: Option<&Reaches>) -> (Vec<String>, Vec<String>) {
        let mut hold: Vec<String> =
            Url::parse(&target.url).ok().as_ref().and_then(domain_key).into_iter().collect();
        if let Some(known) = known {
            hold.extend(known.own.iter().cloned());
        }
        hold.sort();
        hold.dedup();
        let free = known.map(|k| k.hops.clone()).unwrap_or_default();
        (hold, free)
    }

    /// Holds `hold` if no other check is talking to it or to `free`; None otherwise.
    fn take(busy: &Arc<Busy>, target: &Target, hold: Vec<String>, free: &[String]) -> Option<Pass> {
        if !busy.try_hold(&hold, free) {
            return None;
        }
        Some(Pass {
            busy: busy.clone(),
            host: Url::parse(&target.url).ok().as_ref().and_then(host_name),
            state: Mutex::new(PassState { held: hold.into_iter().collect(), ..PassState::default() }),
        })
    }

    fn state(&self) -> MutexGuard<'_, PassState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What this check learned of the hosts it reaches, and whether it gave way.
    fn learned(&self) -> (Reaches, bool) {
        let mut state = self.state();
        let s = &mut *state;
        for list in [&mut s.reaches.own, &mut s.reaches.hops] {
            list.sort();
            list.dedup();
        }
        (s.reaches.clone(), s.gave_way)
    }
}

impl HopGate for Pass {
    fn admit(&self, url: &Url, addrs: &[SocketAddr]) -> Result<Box<dyn Any + Send>, LinkFetchError> {
        let keys = host_keys(url, addrs);
        let own = host_name(url).is_some() && host_name(url) == self.host;
        let mut s = self.state();
        if own { &mut s.reaches.own } else { &mut s.reaches.hops }.extend(keys.iter().cloned());
        let new: Vec<String> = keys.into_iter().filter(|k| !s.held.contains(k)).collect();
        if new.is_empty() {
            return Ok(Box::new(()));
        }
        if !self.busy.try_hold(&new, &[]) {
            s.gave_way = true;
            return Err(LinkFetchError::HostBusy);
        }
        if own {
            s.held.extend(new);
            Ok(Box::new(()))
        } else {
            Ok(Box::new(HopHeld { busy: self.busy.clone(), keys: new }))
        }
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        let held = std::mem::take(&mut self.state().held);
        self.busy.release(held.iter());
    }
}

/// A URL's host as it names it (lowercase, without a final dot).
fn host_name(url: &Url) -> Option<String> {
    match url.host()? {
        url::Host::Domain(name) => Some(name.trim_end_matches('.').to_ascii_lowercase()),
        url::Host::Ipv4(ip) => Some(ip.to_string()),
        url::Host::Ipv6(ip) => Some(ip.to_string()),
    }
}

/// The key of a URL's registrable domain (or of the address it names: the public suffix list
/// would read 127.0.0.1 as a domain).
fn domain_key(url: &Url) -> Option<String> {
    let domain = match url.host()? {
        url::Host::Domain(_) => {
            let host = host_name(url)?;
            psl::domain_str(&host).unwrap_or(&host).to_owned()
        }
        url::Host::Ipv4(ip) => ip.to_string(),
        url::Host::Ipv6(ip) => ip.to_string(),
    };
    Some(format!("domain:{domain}"))
}

/// What a hop must not share with another check talking at the same time: the registrable
/// domain of its host and every address the host was checked and pinned to.
fn host_keys(url: &Url, addrs: &[SocketAddr]) -> Vec<String> {
    let mut keys: Vec<String> = domain_key(url).into_iter().collect();
    keys.extend(addrs.iter().map(|a| format!("ip:{}", a.ip())));
    keys.sort();
    keys.dedup();
    keys
}

/// Checks one endpoint and records what changed, unless the check gave way to another.
async fn check_one(app: &App, target: &Target, pass: Pass) -> Outcome {
    let listing = {
        let t = target.clone();
        app.blocking(move |app| store::listing(&*app.read()?, &t)).await
    };
    let handle = match listing {
        Ok(Listing::Shown(handle)) => handle,
        Ok(Listing::Hidden) => return Outcome::Hidden,
        Ok(Listing::Gone) => return Outcome::Gone,
        Err(e) => {
            tracing::warn!(error = %e, "endpoint check skipped: the database did not answer");
            return Outcome::Unread;
        }
    };
    let started = Instant::now();
    let found = endpoint_probe::check(
        target.kind,
        &target.url,
        &handle,
        &app.settings.link_fetch_allow_private,
        &pass,
    )
    .await;
    let (reaches, gave_way) = pass.learned();
    drop(pass);
    if gave_way {
        tracing::debug!(
            agent_id = target.agent_id,
            "endpoint check gave way to another on a host it reaches"
        );
        return Outcome::GaveWay(reaches);
    }
    telemetry::endpoint_checked(target.kind.as_str(), found.status().as_str(), started.elapsed());
    tracing::debug!(
        agent_id = target.agent_id,
        kind = target.kind.as_str(),
        status = found.status().as_str(),
        "endpoint checked"
    );
    record(app, target, found).await;
    Outcome::Checked(reaches)
}

/// Writes a finding that differs from the stored one. The comparison is made on a read
/// connection first, with the finding settled as it would be stored (`settle`), so a check that
/// changes nothing costs no write transaction at all (not even an empty one through the writer,
/// which would move the position replicas follow); the write settles and compares again, in case
/// a change of the list came between.
async fn record(app: &App, target: &Target, found: Finding) {
    let t = target.clone();
    let seen = found.clone();
    let changes = app
        .blocking(move |app| {
            let conn = app.read()?;
            let Some(stored) = store::finding(&conn, &t)? else { return Ok(false) };
            let settled = settle(app, &conn, &t, seen, Some(&stored), now_ms(), Pacing::Ask)?;
            Ok(settled != stored)
        })
        .await;
    match changes {
        Ok(true) => {}
        Ok(false) => return,
        Err(e) => {
            tracing::warn!(error = %e, "an endpoint check's finding could not be compared");
            return;
        }
    }
    let t = target.clone();
    let app_ = app.clone();
    let written = app.write(move |tx| {
        let now = now_ms();
        let stored = store::finding(tx, &t)?;
        let before = stored.as_ref().map(|f| f.status());
        let found = settle(&app_, tx, &t, found, stored.as_ref(), now, Pacing::Spend)?;
        if store::record(tx, &t, &found, now)? && before != Some(found.status()) {
            // The agent hears when its endpoint goes down, comes back, or is found invalid.
            let detail = EventDetail {
                endpoint_kind: Some(t.kind),
                status: Some(found.status()),
                previous_status: before,
                ..EventDetail::default()
            };
            let kind = EventKind::EndpointStatusChanged;
            tell(tx, t.agent_id, kind, SubjectKind::Endpoint, &t.url, detail, now)?;
        }
        Ok(())
    });
    if let Err(e) = written.await {
        tracing::warn!(error = %e, "an endpoint check's finding could not be recorded");
    }
}

/// Whether settling a finding spends the agent's profile-edit budget or only asks whether it
/// has room (counting nothing).
#[derive(Clone, Copy, PartialEq)]
enum Pacing {
    Ask,
    Spend,
}

/// A check's finding as it is stored. What an endpoint exposes counts for the first agent that
/// proved the endpoint its own. A change of it changes what the agent's profile means, so it is
/// paced like profile writes (the agent's profile-edit budget): past the budget the finding keeps
/// what was stored and the next check tries again. A proof that no longer holds is recorded at
/// once.
fn settle(
    app: &App,
    conn: &rusqlite::Connection,
    t: &Target,
    mut found: Finding,
    stored: Option<&Finding>,
    now: i64,
    pacing: Pacing,
) -> crate::error::Result<Finding> {
    if found.proof.is_some() && store::proven_by_another(conn, t)? {
        found.proof = None;
        found.observed.clear();
    }
    if let Some(stored) = stored
        && found.proof.is_some()
        && (stored.proof, &stored.observed) != (found.proof, &found.observed)
    {
        let room = match pacing {
            Pacing::Ask => app.limits.allows_agent(conn, Persistent::ProfileEdits, t.agent_id, now)?,
            Pacing::Spend => app.limits.spend_agent(conn, Persistent::ProfileEdits, t.agent_id, now).is_ok(),
        };
        if !room {
            found.proof = stored.proof;
            found.observed = stored.observed.clone();
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::endpoint::EndpointKind;

    fn target(agent_id: i64, url: &str) -> Target {
        Target { agent_id, kind: EndpointKind::Http, url: url.to_owned() }
    }

    fn url(u: &str) -> Url {
        Url::parse(u).expect("url")
    }

    fn addr(ip: &str) -> SocketAddr {
        SocketAddr::new(ip.parse().expect("ip"), 443)
    }

    #[test]
    fn hosts_are_their_registrable_domain_and_their_addresses() {
        assert_eq!(domain_key(&url("https://a.example.co.uk/mcp")).as_deref(), Some("domain:example.co.uk"));
        assert_eq!(
            domain_key(&url("http://B.Example.CO.UK.:8080/")).as_deref(),
            Some("domain:example.co.uk")
        );
        assert_eq!(domain_key(&url("http://127.0.0.1:8000/")).as_deref(), Some("domain:127.0.0.1"));
        assert_eq!(
            host_keys(&url("https://a.example.org/"), &[addr("192.0.2.1"), addr("192.0.2.1")]),
            vec!["domain:example.org".to_owned(), "ip:192.0.2.1".to_owned()]
        );
    }

    #[test]
    fn a_busy_host_takes_no_place_from_the_others() {
        let interval = Duration::from_secs(3600);
        let busy = Arc::new(Busy::default());
        // Seven agents with three endpoints each on one host, due first; then an unrelated one.
        let mut targets: Vec<(Target, bool)> =
            (0..21).map(|n| (target(n / 3, &format!("https://slow.example/{n}")), false)).collect();
        targets.push((target(99, "https://unrelated.example.org/"), false));
        let mut s = Schedule::starting(targets, interval);
        let now = Instant::now();
        for (n, at) in s.due.iter_mut() {
            if n.agent_id == 99 {
                *at = now;
            } else {
                *at = now - Duration::from_secs(60);
            }
        }
        let started = s.start(now, &busy, CHECKS_AT_ONCE);
        let urls: Vec<&str> = started.iter().map(|(t, _)| t.url.as_str()).collect();
        assert_eq!(urls.len(), 2, "one check of the slow host, and the unrelated one: {urls:?}");
        assert!(urls.contains(&"https://unrelated.example.org/"), "{urls:?}");
        assert_eq!(s.due.len(), 20, "the others wait on the schedule");
        // Nothing more starts while the slow host is held, however many places are free.
        assert!(s.start(now, &busy, CHECKS_AT_ONCE).is_empty());
        let (first, pass) = started.into_iter().find(|(t, _)| t.agent_id != 99).expect("slow");
        drop(pass);
        s.finished(first, Outcome::Checked(Reaches::default()), now);
        let next = s.start(now, &busy, CHECKS_AT_ONCE);
        assert_eq!(next.len(), 1, "the next check of the slow host once the first is done");
        assert_eq!(s.next_wake(now), s.due.values().filter(|at| **at > now).min().copied());
    }

    #[test]
    fn a_check_that_gave_way_waits_for_the_host_it_met() {
        let busy = Arc::new(Busy::default());
        let t = target(1, "https://a.example/");
        let mut s = Schedule::starting(vec![(t.clone(), false)], Duration::from_secs(3600));
        let now = Instant::now();
        let (_, pass) = s.start(now, &busy, 4).pop().expect("started");
        // Another check holds the host of a redirect.
        let taken = vec!["domain:b.example".to_owned()];
        assert!(busy.try_hold(&taken, &[]));
        let other = HopHeld { busy: busy.clone(), keys: taken };
        assert!(pass.admit(&url("https://a.example/x"), &[addr("192.0.2.1")]).is_ok(), "its own host");
        let refused = pass.admit(&url("https://b.example/"), &[addr("192.0.2.2")]);
        assert!(matches!(refused, Err(LinkFetchError::HostBusy)));
        let (reaches, gave_way) = pass.learned();
        assert!(gave_way);
        assert_eq!(reaches.own, vec!["domain:a.example".to_owned(), "ip:192.0.2.1".to_owned()]);
        assert_eq!(reaches.hops, vec!["domain:b.example".to_owned(), "ip:192.0.2.2".to_owned()]);
        drop(pass);
        s.finished(t.clone(), Outcome::GaveWay(reaches), now);
        assert!(s.start(now, &busy, 4).is_empty(), "it waits while b.example is busy");
        drop(other);
        // b.example's own endpoint, due later, does not start beside it to take b.example first.
        let on_b = target(2, "https://www.b.example/");
        s.due.insert(on_b.clone(), now + Duration::from_millis(1));
        let mut started = s.start(now + Duration::from_millis(1), &busy, 4);
        assert_eq!(started.len(), 1, "started once b.example is free, alone");
        let (first, pass) = started.pop().expect("started");
        assert_eq!(first, t);
        {
            let held = busy.lock();
            assert!(held.contains("ip:192.0.2.1"), "its own address, learned, is held from the start");
            assert!(!held.contains("domain:b.example"), "the redirect's host is held only while used");
        }
        let hop = pass.admit(&url("https://b.example/"), &[addr("192.0.2.2")]).expect("free now");
        assert!(busy.lock().contains("domain:b.example"));
        drop(hop);
        assert!(!busy.lock().contains("domain:b.example"), "released with its hop");
        drop(pass);
        assert!(busy.lock().is_empty(), "all released with the pass");
    }

    #[test]
    fn a_check_gives_way_a_bounded_number_of_times() {
        let t = target(1, "https://a.example/");
        let mut s = Schedule::starting(vec![(t.clone(), false)], Duration::from_secs(3600));
        let now = Instant::now();
        for _ in 0..GIVE_WAY_AT_MOST - 1 {
            s.in_flight.insert(t.clone(), now);
            s.due.remove(&t);
            s.finished(t.clone(), Outcome::GaveWay(Reaches::default()), now);
            assert_eq!(s.due[&t], now, "tried again as soon as it may");
        }
        s.in_flight.insert(t.clone(), now);
        s.finished(t.clone(), Outcome::GaveWay(Reaches::default()), now);
        assert!(s.due[&t] > now + Duration::from_secs(3000), "then its next interval");
    }

    #[test]
    fn the_schedule_spreads_and_repeats_checks() {
        let t = |n: i64| target(n, &format!("https://{n}.example/"));
        let interval = Duration::from_secs(3600);
        let busy = Arc::new(Busy::default());
        let mut s = Schedule::starting(vec![(t(1), false), (t(2), true)], interval);
        let now = Instant::now();
        let started: Vec<Target> = s.start(now, &busy, 4).into_iter().map(|(t, _)| t).collect();
        assert_eq!(started, vec![t(1)], "never checked: at once; checked before: later in the interval");
        s.asked(t(1));
        s.finished(t(1), Outcome::Checked(Reaches::default()), now);
        let started: Vec<Target> = s.start(now, &busy, 4).into_iter().map(|(t, _)| t).collect();
        assert_eq!(started, vec![t(1)], "set again while checking: checked again at once");
        s.finished(t(1), Outcome::Hidden, now);
        let next = s.due[&t(1)];
        assert!(
            next >= now + interval.mul_f64(1.0 - CHECK_JITTER)
                && next <= now + interval.mul_f64(1.0 + CHECK_JITTER),
            "a hidden agent's endpoint stays on the schedule"
        );
        let started = s.start(now + interval * 2, &busy, 4);
        assert_eq!(started.len(), 2);
        drop(started);
        s.finished(t(2), Outcome::Gone, now);
        assert!(!s.due.contains_key(&t(2)), "an endpoint no longer listed leaves the schedule");
    }
}
