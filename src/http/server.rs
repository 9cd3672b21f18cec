//! The accept loop. `axum::serve` offers no knobs for header limits or header read time, so
//! connections are served here with hyper's HTTP/1 builder: headers are bounded in size and
//! count and must arrive within the header timeout (which also closes idle keep-alive
//! connections), open connections are capped in all and per client address, the last quarter
//! of them kept for networks that hold few (so slow clients from a few addresses cannot take
//! every slot), and shutdown stops accepting, lets in-flight requests finish within a grace
//! period, then returns.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;

use super::middleware::Hardening;
use crate::app::limits::client_of;
use crate::app::shares::Network;
use crate::domain::schema::{MAX_HEAD_BYTES, MAX_HEADERS};
use crate::telemetry;

/// What the parser buffers of a request head, and the header fields it takes, before it answers
/// `431` on its own (no body, the connection closed). Above the rule (`MAX_HEAD_BYTES`,
/// `MAX_HEADERS`, enforced in `middleware::guard` with an envelope that says what to shorten),
/// far below hyper's default (~400 KB), so a connection cannot make the server buffer much
/// before a single route runs.
const PARSER_HEAD_BYTES: usize = 4 * MAX_HEAD_BYTES;
const PARSER_HEADERS: usize = 2 * MAX_HEADERS;
/// Per-connection read buffer; bodies stream through it, so it does not bound them.
const READ_BUFFER: usize = 64 * 1024;

fn is_per_connection(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(e.kind(), ConnectionRefused | ConnectionAborted | ConnectionReset)
}

/// Serves `app` on `listener` until `shutdown` completes, then drains.
pub async fn run(listener: TcpListener, app: Router, limits: &Hardening, shutdown: impl Future<Output = ()>) {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_header_size(PARSER_HEAD_BYTES)
        .max_headers(PARSER_HEADERS)
        .max_buf_size(READ_BUFFER);
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let per_client = PerClient::new(limits);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) if is_per_connection(&e) => continue,
                Err(e) => {
                    // Out of file descriptors and the like: wait for connections to close
                    // rather than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let client_slot = match per_client.take(peer.ip(), slots.available_permits()) {
            Ok(slot) => slot,
            Err(refused) => {
                metrics::counter!(telemetry::CONNECTIONS_REFUSED, "reason" => refused.reason()).increment(1);
                drop(stream);
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            metrics::counter!(telemetry::CONNECTIONS_REFUSED, "reason" => "total").increment(1);
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            let mut req = req.map(Body::new);
            req.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
            app.clone().oneshot(req)
        });
        let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            metrics::gauge!(telemetry::CONNECTIONS_OPEN).increment(1.0);
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "connection closed with an error");
            }
            metrics::gauge!(telemetry::CONNECTIONS_OPEN).decrement(1.0);
            drop((slot, client_slot));
        });
    }
    drop(listener);
    tracing::info!("shutting down: no new connections; finishing in-flight requests");
    tokio::select! {
        () = graceful.shutdown() => tracing::info!("all connections closed"),
        () = tokio::time::sleep(limits.shutdown_grace) => {
            tracing::warn!(grace_s = limits.shutdown_grace.as_secs_f64(), "grace period over; closing the remaining connections");
        }
    }
}

/// The last slots, a quarter of them, are kept for networks that hold few connections: without
/// them, `max_connections / max_connections_per_ip` addresses (eight by default, all in one
/// /24) could hold every slot by reconnecting as soon as the header timeout closes them.
const RESERVED_PART: usize = 4;
/// Connections a network may hold and still take a kept slot: a client of one or a few
/// browsers or agents holds fewer.
const FEW_CONNECTIONS: usize = 8;

/// Open connections per client address ([`client_of`]) and per network ([`Network`]: an IPv4
/// /24, an IPv6 /48), for peers that are not trusted proxies.
#[derive(Clone)]
struct PerClient {
    open: Arc<Mutex<Open>>,
    max: usize,
    /// Free slots at or below which only networks holding fewer than [`FEW_CONNECTIONS`] are let in.
    reserved: usize,
    trusted: Arc<[ipnet::IpNet]>,
}

#[derive(Default)]
struct Open {
    by_client: HashMap<IpAddr, usize>,
    by_network: HashMap<Network, usize>,
}

/// Why a connection was closed at once (the label of `agentdir_http_connections_refused_total`).
#[derive(Debug, PartialEq, Eq)]
enum Refused {
    /// Its address holds `max_connections_per_ip`.
    PerClient,
    /// Few slots are left, and its network holds more than a few.
    Reserved,
}

impl Refused {
    fn reason(&self) -> &'static str {
        match self {
            Refused::PerClient => "per_client",
            Refused::Reserved => "reserved",
        }
    }
}

/// One open connection of a client; the counts drop with it.
struct ClientSlot {
    of: Option<(PerClient, IpAddr)>,
}

impl PerClient {
    fn new(limits: &Hardening) -> PerClient {
        PerClient {
            open: Arc::default(),
            max: limits.max_connections_per_ip,
            reserved: limits.max_connections / RESERVED_PART,
            trusted: limits.trusted_proxies.clone().into(),
        }
    }

    /// A slot for a new connection from `peer` while `free` slots are left in all, or why not.
    fn take(&self, peer: IpAddr, free: usize) -> Result<ClientSlot, Refused> {
        if crate::net::is_trusted_proxy(peer, &self.trusted) {
            return Ok(ClientSlot { of: None });
        }
        let client = client_of(peer);
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if open.by_client.get(&client).is_some_and(|&n| n >= self.max) {
            return Err(Refused::PerClient);
        }
        let network = Network::of(peer);
        if free <= self.reserved && open.by_network.get(&network).is_some_and(|&n| n >= FEW_CONNECTIONS) {
            return Err(Refused::Reserved);
        }
        *open.by_client.entry(client).or_default() += 1;
        *open.by_network.entry(network).or_default() += 1;
        Ok(ClientSlot { of: Some((self.clone(), client)) })
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let Some((per_client, client)) = self.of.take() else { return };
        let mut open = per_client.open.lock().unwrap_or_else(|e| e.into_inner());
        release(&mut open.by_client, client);
        release(&mut open.by_network, Network::of(client));
    }
}

fn release<K: std::hash::Hash + Eq>(counts: &mut HashMap<K, usize>, key: K) {
    if let Some(n) = counts.get_mut(&key) {
        *n -= 1;
        if *n == 0 {
            counts.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_per_ip: usize, trusted: &[&str]) -> Hardening {
        Hardening {
            max_in_flight: 1,
            queue_wait: Duration::from_secs(1),
            max_connections: 1024,
            max_connections_per_ip: max_per_ip,
            trusted_proxies: trusted.iter().map(|t| t.parse().expect("net")).collect(),
            request_timeout: Duration::from_secs(1),
            body_timeout: Duration::from_secs(1),
            header_timeout: Duration::from_secs(1),
            shutdown_grace: Duration::from_secs(1),
        }
    }

    #[test]
    fn a_client_holds_at_most_its_share_and_ipv6_counts_by_its_64() {
        let per_client = PerClient::new(&limits(2, &["10.0.0.1/32"]));
        let ip = |s: &str| s.parse::<IpAddr>().expect("ip");
        let take = |s: &str| per_client.take(ip(s), 1024);
        let a = take("192.0.2.1").expect("first");
        let _b = take("192.0.2.1").expect("second");
        assert_eq!(take("192.0.2.1").err(), Some(Refused::PerClient), "a third from one address");
        assert!(take("192.0.2.2").is_ok(), "another address has its own share");
        drop(a);
        assert!(take("192.0.2.1").is_ok(), "a closed connection frees its slot");
        let _c = take("2001:db8:1:2::1").expect("v6");
        let _d = take("2001:db8:1:2:ffff::9").expect("same /64");
        assert!(take("2001:db8:1:2::77").is_err(), "a /64 is one client");
        assert!(take("2001:db8:1:3::1").is_ok(), "the next /64 is another");
        let proxied: Vec<_> = (0..5).filter_map(|_| take("10.0.0.1").ok()).collect();
        assert_eq!(proxied.len(), 5, "a trusted proxy is not capped");
        // Nor when a dual-stack listener reports it as an IPv4-mapped address.
        let mapped: Vec<_> = (0..5).filter_map(|_| take("::ffff:10.0.0.1").ok()).collect();
        assert_eq!(mapped.len(), 5, "a trusted proxy seen through a dual-stack listener is not capped");
    }

    #[test]
    fn the_last_slots_are_kept_for_networks_that_hold_few() {
        // 1,024 slots, a quarter kept: past 768 taken, a network holding 8 or more waits.
        let per_client = PerClient::new(&limits(128, &[]));
        let ip = |s: &str| s.parse::<IpAddr>().expect("ip");
        let held: Vec<_> =
            (0..FEW_CONNECTIONS).map(|_| per_client.take(ip("198.51.100.7"), 300).expect("held")).collect();
        assert_eq!(per_client.take(ip("198.51.100.8"), 256).err(), Some(Refused::Reserved), "same /24");
        assert!(per_client.take(ip("198.51.100.8"), 257).is_ok(), "while more than the kept slots are free");
        assert!(per_client.take(ip("203.0.113.1"), 1).is_ok(), "another network holding none");
        assert!(per_client.take(ip("2001:db8:5:1::1"), 1).is_ok());
        drop(held);
        assert!(per_client.take(ip("198.51.100.9"), 1).is_ok(), "the network now holds one");
    }
}
