//! What every adapter knows of a request as it arrived: where it comes from — the client's
//! address, as every limit counts it; REST (its extractors), MCP (the embedding budget per
//! client) and a replica forwarding a write to the primary (which trusts it for
//! `X-Forwarded-For`) read it alike — and, on a route that may wait, the in-flight slot it holds,
//! which it gives back while it waits (a long poll, or a replica forwarding one).

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use tokio::sync::OwnedSemaphorePermit;

use axum::extract::ConnectInfo;
use axum::http::HeaderMap;
use axum::http::request::Parts;

use crate::app::App;

/// The client of a request, as every limit counts it (see [`client_ip`]).
pub fn request_client_ip(parts: &Parts, app: &App) -> IpAddr {
    let peer = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
        .unwrap_or(IpAddr::from([127, 0, 0, 1]));
    client_ip(peer, &parts.headers, &app.settings().trusted_proxies)
}

/// The client's address: the socket peer, or, when the peer is a trusted proxy, the right-most
/// `X-Forwarded-For` entry that is not a trusted proxy.
pub fn client_ip(peer: IpAddr, headers: &HeaderMap, trusted: &[ipnet::IpNet]) -> IpAddr {
    // A dual-stack listener reports IPv4 peers as ::ffff:a.b.c.d; compare and count them as the
    // IPv4 addresses they are.
    let peer = peer.to_canonical();
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(ip));
    if !is_trusted(&peer) {
        return peer;
    }
    let entries: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .collect();
    // Walk from the nearest hop outwards; stop at the first address no trusted proxy vouches
    // for. An unreadable entry ends the walk: what lies beyond it cannot be trusted.
    let mut client = peer;
    for entry in entries.iter().rev() {
        match entry.trim().parse::<IpAddr>().map(|ip| ip.to_canonical()) {
            Ok(ip) if is_trusted(&ip) => client = ip,
            Ok(ip) => return ip,
            Err(_) => return client,
        }
    }
    client
}

/// The in-flight slot of a request on a route that may wait (the hardening middleware puts it
/// in the request's extensions): whoever waits on something other than the directory's work
/// gives it back, so a waiting poll holds none of the slots other requests need.
#[derive(Clone)]
pub struct InFlightSlot(Arc<Mutex<Option<OwnedSemaphorePermit>>>);

impl InFlightSlot {
    pub fn holding(permit: Option<OwnedSemaphorePermit>) -> InFlightSlot {
        InFlightSlot(Arc::new(Mutex::new(permit)))
    }

    /// Frees the slot now (it would be freed when the request ends).
    pub fn give_back(&self) {
        drop(self.0.lock().unwrap_or_else(|e| e.into_inner()).take());
    }
}
