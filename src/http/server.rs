//! The accept loop. `axum::serve` offers no knobs for header limits or header read time, so
//! connections are served here with hyper's HTTP/1 builder: headers are bounded in size and
//! count and must arrive within the header timeout (which also closes idle keep-alive
//! connections), open connections are capped in all and per client address (so slow clients
//! from a few addresses cannot take every slot), and shutdown stops accepting, lets in-flight
//! requests finish within a grace period, then returns.

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
use crate::telemetry;

/// Request line and headers together. Far above what any client of a JSON API sends, far below
/// hyper's default (~400 KB), so a connection cannot make the server buffer much before a
/// single route runs.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;
pub const MAX_HEADERS: usize = 64;
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
        .max_header_size(MAX_HEADER_BYTES)
        .max_headers(MAX_HEADERS)
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
        let Some(client_slot) = per_client.take(peer.ip()) else {
            metrics::counter!(telemetry::CONNECTIONS_REFUSED, "reason" => "per_client").increment(1);
            drop(stream);
            continue;
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

/// Open connections per client address ([`client_of`]), for peers that are not trusted proxies.
#[derive(Clone)]
struct PerClient {
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
    max: usize,
    trusted: Arc<[ipnet::IpNet]>,
}

/// One open connection of a client; the count drops with it.
struct ClientSlot {
    of: Option<(PerClient, IpAddr)>,
}

impl PerClient {
    fn new(limits: &Hardening) -> PerClient {
        PerClient {
            open: Arc::default(),
            max: limits.max_connections_per_ip,
            trusted: limits.trusted_proxies.clone().into(),
        }
    }

    /// A slot for a new connection from `peer`, or `None` when its client holds the most.
    fn take(&self, peer: IpAddr) -> Option<ClientSlot> {
        if self.trusted.iter().any(|net| net.contains(&peer)) {
            return Some(ClientSlot { of: None });
        }
        let client = client_of(peer);
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let n = open.entry(client).or_default();
        if *n >= self.max {
            return None;
        }
        *n += 1;
        Some(ClientSlot { of: Some((self.clone(), client)) })
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let Some((per_client, client)) = self.of.take() else { return };
        let mut open = per_client.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(&client) {
            *n -= 1;
            if *n == 0 {
                open.remove(&client);
            }
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
        let a = per_client.take(ip("192.0.2.1")).expect("first");
        let _b = per_client.take(ip("192.0.2.1")).expect("second");
        assert!(per_client.take(ip("192.0.2.1")).is_none(), "a third from one address");
        assert!(per_client.take(ip("192.0.2.2")).is_some(), "another address has its own share");
        drop(a);
        assert!(per_client.take(ip("192.0.2.1")).is_some(), "a closed connection frees its slot");
        let _c = per_client.take(ip("2001:db8:1:2::1")).expect("v6");
        let _d = per_client.take(ip("2001:db8:1:2:ffff::9")).expect("same /64");
        assert!(per_client.take(ip("2001:db8:1:2::77")).is_none(), "a /64 is one client");
        assert!(per_client.take(ip("2001:db8:1:3::1")).is_some(), "the next /64 is another");
        let proxied: Vec<_> = (0..5).filter_map(|_| per_client.take(ip("10.0.0.1"))).collect();
        assert_eq!(proxied.len(), 5, "a trusted proxy is not capped");
    }
}
