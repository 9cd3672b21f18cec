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

/// Whether `ip` is one of the trusted proxies. A dual-stack listener reports IPv4 peers as
/// ::ffff:a.b.c.d, and an operator may write them either way: both spellings are one address.
pub fn is_trusted_proxy(ip: IpAddr, trusted: &[ipnet::IpNet]) -> bool {
    let ip = ip.to_canonical();
    trusted.iter().any(|net| net.contains(&ip) || ipv4_written_mapped(net).is_some_and(|v4| v4.contains(&ip)))
}

/// A net written in IPv4-mapped IPv6 (`::ffff:127.0.0.1/128`, `::ffff:0:0/96`) as the IPv4 net
/// it names; none for any other net (so `::/0`, all of IPv6, does not take in IPv4).
fn ipv4_written_mapped(net: &ipnet::IpNet) -> Option<ipnet::IpNet> {
    let ipnet::IpNet::V6(v6) = net else { return None };
    let v4 = v6.network().to_ipv4_mapped()?;
    let len = v6.prefix_len().checked_sub(96)?;
    ipnet::Ipv4Net::new(v4, len).ok().map(ipnet::IpNet::V4)
}

/// The client's address: the socket peer, or, when the peer is a trusted proxy, the right-most
/// `X-Forwarded-For` entry that is not a trusted proxy.
pub fn client_ip(peer: IpAddr, headers: &HeaderMap, trusted: &[ipnet::IpNet]) -> IpAddr {
    // IPv4 peers of a dual-stack listener are counted as the IPv4 addresses they are.
    let peer = peer.to_canonical();
    if !is_trusted_proxy(peer, trusted) {
        return peer;
    }
    // Each entry is read on its own, from the header's bytes: one a client wrote unreadable
    // (to the left of what the proxy appended) must not make the whole header unreadable.
    let entries: Vec<&[u8]> =
        headers.get_all("x-forwarded-for").iter().flat_map(|v| v.as_bytes().split(|&b| b == b',')).collect();
    // Walk from the nearest hop outwards; stop at the first address no trusted proxy vouches
    // for. An unreadable entry ends the walk: what lies beyond it cannot be trusted.
    let mut client = peer;
    for entry in entries.iter().rev() {
        match forwarded_address(entry) {
            Some(ip) if is_trusted_proxy(ip, trusted) => client = ip,
            Some(ip) => return ip,
            None => return client,
        }
    }
    client
}

/// One `X-Forwarded-For` entry: an address, as most proxies write it, or with a port
/// (`1.2.3.4:5678`, `[2001:db8::1]:5678`) or in brackets, as some do.
fn forwarded_address(entry: &[u8]) -> Option<IpAddr> {
    let text = std::str::from_utf8(entry).ok()?.trim();
    let ip = text
        .parse::<IpAddr>()
        .ok()
        .or_else(|| text.parse::<SocketAddr>().ok().map(|a| a.ip()))
        .or_else(|| text.strip_prefix('[')?.strip_suffix(']')?.parse().ok())?;
    Some(ip.to_canonical())
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

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    fn nets(list: &[&str]) -> Vec<ipnet::IpNet> {
        list.iter().map(|n| n.parse().expect("net")).collect()
    }

    fn forwarded(values: &[&[u8]]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append("x-forwarded-for", HeaderValue::from_bytes(v).expect("header"));
        }
        headers
    }

    #[test]
    fn a_proxy_is_trusted_in_either_spelling_of_its_ipv4_address() {
        for trusted in [nets(&["127.0.0.1/32"]), nets(&["::ffff:127.0.0.1/128"]), nets(&["::ffff:0:0/96"])] {
            for peer in ["127.0.0.1", "::ffff:127.0.0.1"] {
                assert!(is_trusted_proxy(ip(peer), &trusted), "{peer} under {trusted:?}");
                assert_eq!(client_ip(ip(peer), &forwarded(&[b"198.51.100.7"]), &trusted), ip("198.51.100.7"));
            }
        }
        assert!(!is_trusted_proxy(ip("127.0.0.2"), &nets(&["::ffff:127.0.0.1/128"])));
        // All of IPv6 is not all of IPv4.
        assert!(!is_trusted_proxy(ip("127.0.0.1"), &nets(&["::/0"])));
        assert!(!is_trusted_proxy(ip("127.0.0.1"), &nets(&["::/64"])));
        assert!(is_trusted_proxy(ip("2001:db8::1"), &nets(&["::/0"])));
    }

    #[test]
    fn each_forwarded_entry_is_read_on_its_own() {
        let proxy = ip("10.0.0.1");
        let trusted = nets(&["10.0.0.0/24"]);
        let client = |values: &[&[u8]]| client_ip(proxy, &forwarded(values), &trusted);
        // What a client wrote to the left of what the proxy appended does not matter.
        assert_eq!(client(&[b"\xff, 198.51.100.7"]), ip("198.51.100.7"));
        assert_eq!(client(&[b"not an address, 198.51.100.7"]), ip("198.51.100.7"));
        // Ports and brackets, as some proxies write them.
        assert_eq!(client(&[b"198.51.100.8:51234"]), ip("198.51.100.8"));
        assert_eq!(client(&[b"[2001:db8::9]:443"]), ip("2001:db8::9"));
        assert_eq!(client(&[b"[2001:db8::9]"]), ip("2001:db8::9"));
        // Trusted hops are walked past, across header lines.
        assert_eq!(client(&[b"203.0.113.5", b"10.0.0.2"]), ip("203.0.113.5"));
        // An unreadable entry between the proxies and the client ends the walk at the last
        // address vouched for.
        assert_eq!(client(&[b"203.0.113.5, \xff, 10.0.0.2"]), ip("10.0.0.2"));
        // A peer that is no proxy is the client, whatever it forwards.
        assert_eq!(client_ip(ip("192.0.2.1"), &forwarded(&[b"198.51.100.7"]), &trusted), ip("192.0.2.1"));
    }
}
