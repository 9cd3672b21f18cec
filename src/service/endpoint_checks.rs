//! When endpoints are checked: at once when they are set, then again every interval (jittered),
//! a few at a time, never two at once against one resolved address or one registrable domain.
//! What a check finds is written only when it differs from what the card shows, so the
//! schedule never churns the change log, the caches or the replicas; the times of checks live
//! in memory and in `/metrics` (the operator's view), not in the database.
//!
//! Only a primary runs the schedule (`app::background` starts it there): a replica cannot write,
//! and its copy shows what the primary's checks found.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, Semaphore, mpsc};

use super::App;
use crate::domain::endpoint::{CHECK_DEADLINE, CHECK_JITTER, CHECKS_AT_ONCE, Finding};
use crate::endpoint_probe;
use crate::store::endpoints::{self as store, Target};
use crate::telemetry;
use crate::time::now_ms;

/// Endpoints waiting for a check that was asked for (they were just set).
#[derive(Default)]
pub struct Queue {
    asked: Mutex<Vec<Target>>,
    wake: Notify,
}

impl Queue {
    /// Asks for these endpoints to be checked as soon as possible (a server without a running
    /// schedule, a replica, never takes them; it never sets endpoints either).
    pub fn request(&self, targets: Vec<Target>) {
        if targets.is_empty() {
            return;
        }
        self.asked.lock().unwrap_or_else(|e| e.into_inner()).extend(targets);
        self.wake.notify_one();
    }

    fn take(&self) -> Vec<Target> {
        std::mem::take(&mut *self.asked.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Checks started but not finished (waiting for their address or domain included): bounds the
/// DNS look-ups made ahead of the checks that may run.
const STARTED_AT_MOST: usize = 4 * CHECKS_AT_ONCE;

/// Runs the schedule until the task is dropped.
pub async fn run(app: App, interval: Duration) {
    let mut schedule = match app.blocking(|d| store::all_targets(&*d.read()?)).await {
        Ok(targets) => Schedule::starting(targets, interval),
        Err(e) => {
            tracing::error!(error = %e, "endpoint checks: cannot read the endpoints; checks run only as they are set");
            Schedule::starting(Vec::new(), interval)
        }
    };
    let busy = Arc::new(Busy::default());
    let permits = Arc::new(Semaphore::new(CHECKS_AT_ONCE));
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<(Target, bool)>();
    loop {
        for t in app.checks.take() {
            schedule.asked(t);
        }
        while schedule.in_flight.len() < STARTED_AT_MOST {
            let Some(target) = schedule.next_due(Instant::now()) else { break };
            let (app, busy, permits, done) = (app.clone(), busy.clone(), permits.clone(), done_tx.clone());
            tokio::spawn(async move {
                let listed = check_one(&app, &busy, &permits, &target).await;
                let _ = done.send((target, listed));
            });
        }
        telemetry::endpoints_scheduled(schedule.due.len() + schedule.in_flight.len());
        let sleep = schedule
            .next_wake()
            .map_or(Duration::from_secs(3600), |at| at.saturating_duration_since(Instant::now()));
        tokio::select! {
            _ = app.checks.wake.notified() => {}
            Some((target, listed)) = done_rx.recv() => schedule.finished(target, listed, Instant::now()),
            _ = tokio::time::sleep(sleep) => {}
        }
    }
}

/// The next check of every endpoint, and the checks under way.
struct Schedule {
    interval: Duration,
    due: HashMap<Target, Instant>,
    in_flight: HashSet<Target>,
    /// Set again while its check was running: checked again once it finishes.
    again: HashSet<Target>,
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
        Schedule { interval, due, in_flight: HashSet::new(), again: HashSet::new() }
    }

    fn asked(&mut self, t: Target) {
        if self.in_flight.contains(&t) {
            self.again.insert(t);
        } else {
            self.due.insert(t, Instant::now());
        }
    }

    fn next_due(&mut self, now: Instant) -> Option<Target> {
        let target = self.due.iter().filter(|(_, at)| **at <= now).min_by_key(|(_, at)| **at)?.0.clone();
        self.due.remove(&target);
        self.in_flight.insert(target.clone());
        Some(target)
    }

    fn next_wake(&self) -> Option<Instant> {
        self.due.values().min().copied()
    }

    fn finished(&mut self, t: Target, listed: bool, now: Instant) {
        self.in_flight.remove(&t);
        if self.again.remove(&t) {
            self.due.insert(t, now);
        } else if listed {
            let jitter = 1.0 + CHECK_JITTER * (2.0 * rand::random::<f64>() - 1.0);
            self.due.insert(t, now + self.interval.mul_f64(jitter));
        }
    }
}

/// Addresses and registrable domains being checked right now.
#[derive(Default)]
struct Busy {
    keys: Mutex<HashSet<String>>,
    freed: Notify,
}

struct Held<'a> {
    busy: &'a Busy,
    keys: Vec<String>,
}

impl Busy {
    /// Waits until none of `keys` is being checked, then holds them all.
    async fn hold(&self, keys: Vec<String>) -> Held<'_> {
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            {
                let mut busy = self.keys.lock().unwrap_or_else(|e| e.into_inner());
                if !keys.iter().any(|k| busy.contains(k)) {
                    busy.extend(keys.iter().cloned());
                    return Held { busy: self, keys };
                }
            }
            freed.await;
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let mut busy = self.busy.keys.lock().unwrap_or_else(|e| e.into_inner());
        for k in &self.keys {
            busy.remove(k);
        }
        drop(busy);
        self.busy.freed.notify_waiters();
    }
}

/// What a check must not share with another check running at the same time: the registrable
/// domain of its host (or the address it names) and every address the host resolves to.
async fn exclusive_keys(url: &str) -> Vec<String> {
    let Ok(parsed) = url::Url::parse(url) else { return Vec::new() };
    let (host, domain) = match parsed.host() {
        Some(url::Host::Domain(name)) => {
            let host = name.trim_end_matches('.').to_ascii_lowercase();
            let domain = psl::domain_str(&host).unwrap_or(&host).to_owned();
            (host, domain)
        }
        // An address names itself: the public suffix list would read 127.0.0.1 as a domain.
        Some(url::Host::Ipv4(ip)) => (ip.to_string(), ip.to_string()),
        Some(url::Host::Ipv6(ip)) => (ip.to_string(), ip.to_string()),
        None => return Vec::new(),
    };
    let mut keys = vec![format!("domain:{domain}")];
    let port = parsed.port_or_known_default().unwrap_or(80);
    let lookup = tokio::time::timeout(CHECK_DEADLINE, tokio::net::lookup_host((host.as_str(), port))).await;
    if let Ok(Ok(addrs)) = lookup {
        let ips: HashSet<IpAddr> = addrs.map(|a| a.ip()).collect();
        keys.extend(ips.into_iter().map(|ip| format!("ip:{ip}")));
    }
    keys.sort();
    keys.dedup();
    keys
}

/// Checks one endpoint and records what changed. False when the endpoint is no longer listed
/// (it leaves the schedule).
async fn check_one(app: &App, busy: &Busy, permits: &Semaphore, target: &Target) -> bool {
    let listed = {
        let t = target.clone();
        app.blocking(move |d| store::is_listed(&*d.read()?, &t)).await
    };
    match listed {
        Ok(true) => {}
        Ok(false) => return false,
        Err(e) => {
            tracing::warn!(error = %e, "endpoint check skipped: the database did not answer");
            return true;
        }
    }
    let _held = busy.hold(exclusive_keys(&target.url).await).await;
    let Ok(_permit) = permits.acquire().await else { return true };
    let started = Instant::now();
    let found = endpoint_probe::check(target.kind, &target.url, &app.settings.link_fetch_allow_private).await;
    telemetry::endpoint_checked(target.kind.as_str(), found.status().as_str(), started.elapsed());
    tracing::debug!(
        agent_id = target.agent_id,
        kind = target.kind.as_str(),
        status = found.status().as_str(),
        "endpoint checked"
    );
    record(app, target, found).await;
    true
}

/// Writes a finding that differs from the stored one. The comparison is made on a read
/// connection first, so a check that finds nothing new costs no write transaction at all (not
/// even an empty one through the writer); the write compares again, in case a change of the
/// list came between.
async fn record(app: &App, target: &Target, found: Finding) {
    let t = target.clone();
    let seen = found.clone();
    match app.blocking(move |d| store::finding(&*d.read()?, &t)).await {
        Ok(Some(stored)) if stored != seen => {}
        Ok(_) => return,
        Err(e) => {
            tracing::warn!(error = %e, "an endpoint check's finding could not be compared");
            return;
        }
    }
    let t = target.clone();
    if let Err(e) = app.write(move |tx| store::record(tx, &t, &found, now_ms())).await {
        tracing::warn!(error = %e, "an endpoint check's finding could not be recorded");
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn one_check_at_a_time_per_domain_and_address() {
        let a = exclusive_keys("https://a.example.co.uk/mcp").await;
        let b = exclusive_keys("http://b.example.co.uk:8080/").await;
        assert!(a.contains(&"domain:example.co.uk".to_owned()), "{a:?}");
        assert!(b.contains(&"domain:example.co.uk".to_owned()), "{b:?}");
        let ip = exclusive_keys("http://127.0.0.1:8000/").await;
        assert_eq!(ip, vec!["domain:127.0.0.1".to_owned(), "ip:127.0.0.1".to_owned()]);

        let busy = Arc::new(Busy::default());
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let (started_tx, mut started_rx) = mpsc::unbounded_channel();
        let first = busy.hold(vec!["domain:example.co.uk".into()]).await;
        let mut waiting = Vec::new();
        for keys in [a.clone(), b.clone(), vec!["domain:other.org".into()]] {
            let (busy, running, most, started) =
                (busy.clone(), running.clone(), most.clone(), started_tx.clone());
            waiting.push(tokio::spawn(async move {
                let shares = keys.iter().any(|k| k == "domain:example.co.uk");
                let _held = busy.hold(keys).await;
                let _ = started.send(shares);
                if shares {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    running.fetch_sub(1, Ordering::SeqCst);
                }
            }));
        }
        // Only the check on another domain starts while the first holds example.co.uk.
        assert_eq!(started_rx.recv().await, Some(false));
        drop(first);
        for task in waiting {
            task.await.expect("task");
        }
        assert_eq!(most.load(Ordering::SeqCst), 1, "two checks of one domain ran at once");
    }

    #[test]
    fn the_schedule_spreads_and_repeats_checks() {
        let t = |n: i64| Target {
            agent_id: n,
            kind: crate::domain::endpoint::EndpointKind::Http,
            url: format!("https://{n}.example/"),
        };
        let interval = Duration::from_secs(3600);
        let mut s = Schedule::starting(vec![(t(1), false), (t(2), true)], interval);
        let now = Instant::now();
        assert_eq!(s.next_due(now), Some(t(1)), "never checked: at once");
        assert_eq!(s.next_due(now), None, "checked before: later in the interval");
        s.asked(t(1));
        s.finished(t(1), true, now);
        assert_eq!(s.next_due(now), Some(t(1)), "set again while checking: checked again at once");
        s.finished(t(1), true, now);
        let next = s.due[&t(1)];
        assert!(
            next >= now + interval.mul_f64(1.0 - CHECK_JITTER)
                && next <= now + interval.mul_f64(1.0 + CHECK_JITTER)
        );
        s.next_due(now + interval * 2);
        s.finished(t(2), false, now);
        assert!(!s.due.contains_key(&t(2)), "an endpoint no longer listed leaves the schedule");
    }
}
