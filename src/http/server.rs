//! The accept loop. `axum::serve` offers no knobs for header limits or header read time, so
//! connections are served here with hyper's HTTP/1 builder: headers are bounded in size and
//! count and must arrive within the header timeout (which also closes idle keep-alive
//! connections), open connections are capped, and shutdown stops accepting, lets in-flight
//! requests finish within a grace period, then returns.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
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
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            metrics::counter!(telemetry::CONNECTIONS_REFUSED).increment(1);
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
            drop(slot);
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
