//! Link-proof fetches under way. Each waits on a server the agent chose (up to the fetch's
//! deadline) while its request holds one of the directory's in-flight slots, and agents are
//! cheap to make: without a bound, a few hundred fresh agents aiming at a server that never
//! answers held every slot, and public reads waited, then got 503. So they are bounded per
//! client network (an IPv4 /24, an IPv6 /48) and in all, to a share of the in-flight slots, and
//! one past either bound is answered at once.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

use super::shares::Network;
use crate::checks::link_fetch::FETCH_TIMEOUT;
use crate::domain::trust::LINK_FETCHES_PER_NETWORK;
use crate::error::{Error, RateRule, Result};

pub struct LinkFetches {
    open: Mutex<Open>,
    /// Fetches under way at once, in all (see `Settings::link_fetches_at_once`).
    at_once: usize,
}

#[derive(Default)]
struct Open {
    all: usize,
    by_network: HashMap<Network, usize>,
}

/// One fetch's turn; given back when dropped.
pub struct LinkFetchTurn<'a> {
    of: &'a LinkFetches,
    network: Network,
}

impl LinkFetches {
    pub fn new(at_once: usize) -> LinkFetches {
        LinkFetches { open: Mutex::default(), at_once: at_once.max(1) }
    }

    /// A turn for a fetch asked by `client`, or why not.
    pub fn take(&self, client: IpAddr) -> Result<LinkFetchTurn<'_>> {
        let network = Network::of(client);
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if open.by_network.get(&network).is_some_and(|&n| n >= LINK_FETCHES_PER_NETWORK) {
            // About one fetch's deadline: a turn of the network's is free by then.
            let retry_after = FETCH_TIMEOUT.as_secs();
            return Err(Error::RateLimited { retry_after, rule: RateRule::LinkFetchesAtOnce });
        }
        if open.all >= self.at_once {
            return Err(Error::LinkFetchesFull);
        }
        open.all += 1;
        *open.by_network.entry(network).or_default() += 1;
        Ok(LinkFetchTurn { of: self, network })
    }
}

impl Drop for LinkFetchTurn<'_> {
    fn drop(&mut self) {
        let mut open = self.of.open.lock().unwrap_or_else(|e| e.into_inner());
        open.all -= 1;
        if let Some(n) = open.by_network.get_mut(&self.network) {
            *n -= 1;
            if *n == 0 {
                open.by_network.remove(&self.network);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetches_are_bounded_per_network_and_in_all_and_given_back() {
        let fetches = LinkFetches::new(8);
        let ip = |s: &str| s.parse::<IpAddr>().expect("ip");
        let a = fetches.take(ip("198.51.100.1")).expect("first");
        let _b = fetches.take(ip("198.51.100.2")).expect("same /24, second");
        let refused = fetches.take(ip("198.51.100.3")).err().expect("a third from the /24");
        assert_eq!(refused.code(), "rate_limited");
        drop(a);
        let _c = fetches.take(ip("198.51.100.3")).expect("one given back");
        let others: Vec<_> =
            (1..=6).map(|i| fetches.take(ip(&format!("203.0.{i}.1"))).expect("other networks")).collect();
        assert_eq!(fetches.take(ip("192.0.2.1")).err().expect("all taken").code(), "overloaded");
        drop(others);
        assert!(fetches.take(ip("2001:db8:1::1")).is_ok());
    }
}
