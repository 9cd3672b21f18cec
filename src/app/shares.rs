//! Fair shares of the model's time for reading needs. Each client network (an IPv4 /24, an
//! IPv6 /48) has a share: a bucket of need tokens that refills at [`SHARE_TOKENS_PER_SECOND`]
//! up to [`SHARE_BURST_TOKENS`], so a long need costs more than a short one and a client asking
//! one search at a time at a normal rate (~10 a second) never runs it dry. Within its share a
//! need waits for the model in fair order — the network that has used the least of the model
//! goes first, whatever the others send — for at most [`SHARE_WAIT`]; a need beyond its share,
//! a second need of an address that already waits, or a need that waited its longest is
//! refused here, and the caller reads it more cheaply (or by words). Nothing queues without
//! bound: [`WAITING_PER_NETWORK`] and [`WAITING_AT_MOST`] cap the waiting.
//!
//! Counting by network first keeps one network from posing as thousands of clients: its
//! addresses share one share. Long needs (more than [`LONG_NEED_TOKENS`]) hold at most all
//! cores but one, so a short need always finds a core within one short need's time.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

/// Need tokens a network's share refills per second: ten needs of ~25 tokens.
pub const SHARE_TOKENS_PER_SECOND: f64 = 256.0;
/// Need tokens a network may spend at once: two needs as long as the model reads.
pub const SHARE_BURST_TOKENS: f64 = 1_024.0;
/// Past this many tokens a need is long (a paragraph): long needs hold all cores but one.
pub const LONG_NEED_TOKENS: u32 = 64;
/// The longest a need within its share waits for the model.
pub const SHARE_WAIT: Duration = Duration::from_millis(1_000);
/// Needs waiting for the model, per network and in all.
pub const WAITING_PER_NETWORK: usize = 4;
pub const WAITING_AT_MOST: usize = 1_024;
/// Shares remembered before full ones (networks quiet for a while) are forgotten.
const SHARES_REMEMBERED: usize = 4_096;

/// Where a client's need counts: its network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Network(u128);

impl Network {
    /// The /24 of an IPv4 address (an IPv4-mapped IPv6 address counts as IPv4), the /48 of
    /// an IPv6 one.
    pub fn of(ip: IpAddr) -> Network {
        match ip.to_canonical() {
            IpAddr::V4(v4) => Network(u128::from(u32::from(v4) & 0xffff_ff00)),
            IpAddr::V6(v6) => Network((u128::from(v6) & (u128::MAX << 80)) | 1),
        }
    }
}

/// Why a need is not read by the model now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The network's share is spent, or the address already has a need waiting.
    OverShare,
    /// Within its share, but the model was busy for longer than [`SHARE_WAIT`], or too many
    /// needs were waiting.
    Busy,
}

/// A place at the model; dropping it hands the place to the next need in fair order.
pub struct Turn {
    shares: Arc<Shares>,
    long: bool,
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut state = self.shares.lock();
        state.running -= 1;
        if self.long {
            state.running_long -= 1;
        }
        self.shares.dispatch(&mut state);
    }
}

pub struct Shares {
    slots: usize,
    long_slots: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    running: usize,
    running_long: usize,
    buckets: HashMap<Network, Bucket>,
    queues: HashMap<Network, Queue>,
    waiting: usize,
    /// The virtual time: the start of the need most recently given a place.
    now: f64,
    next_id: u64,
}

/// A network's share: its bucket of tokens, and its use of the model (start-time fair
/// queueing: the virtual time at which its last need would have finished).
struct Bucket {
    tokens: f64,
    at: Instant,
    finish: f64,
}

#[derive(Default)]
struct Queue {
    waiters: VecDeque<Waiter>,
}

struct Waiter {
    id: u64,
    address: IpAddr,
    tokens: u32,
    granted: oneshot::Sender<()>,
}

impl Shares {
    /// One place per core.
    pub fn new(cores: usize) -> Arc<Shares> {
        let slots = cores.max(1);
        Arc::new(Shares { slots, long_slots: (slots - 1).max(1), state: Mutex::default() })
    }

    /// A place at the model for a need of `tokens` from `client`, now or after a fair wait.
    pub async fn turn(self: &Arc<Self>, client: IpAddr, tokens: u32) -> Result<Turn, Refused> {
        let network = Network::of(client);
        let long = tokens > LONG_NEED_TOKENS;
        let (id, granted) = {
            let mut state = self.lock();
            let now = Instant::now();
            state.forget_full_shares(now);
            let bucket = state.buckets.entry(network).or_insert(Bucket {
                tokens: SHARE_BURST_TOKENS,
                at: now,
                finish: 0.0,
            });
            bucket.refill(now);
            if bucket.tokens < f64::from(tokens) {
                return Err(Refused::OverShare);
            }
            let queue = state.queues.get(&network);
            if queue.is_some_and(|q| q.waiters.iter().any(|w| w.address == client)) {
                return Err(Refused::OverShare);
            }
            let nobody_waits = state.waiting == 0;
            if nobody_waits && self.has_place(&state, long) {
                state.charge(network, tokens);
                state.start(network, tokens);
                state.running += 1;
                state.running_long += usize::from(long);
                return Ok(Turn { shares: self.clone(), long });
            }
            if state.waiting >= WAITING_AT_MOST
                || queue.is_some_and(|q| q.waiters.len() >= WAITING_PER_NETWORK)
            {
                return Err(Refused::Busy);
            }
            state.charge(network, tokens);
            let (sender, receiver) = oneshot::channel();
            let id = state.next_id;
            state.next_id += 1;
            let queue = state.queues.entry(network).or_default();
            queue.waiters.push_back(Waiter { id, address: client, tokens, granted: sender });
            state.waiting += 1;
            // A place may be free that the needs ahead cannot take (long ones).
            self.dispatch(&mut state);
            (id, receiver)
        };
        let mut granted = granted;
        match tokio::time::timeout(SHARE_WAIT, &mut granted).await {
            Ok(Ok(())) => Ok(Turn { shares: self.clone(), long }),
            _ => {
                let mut state = self.lock();
                if state.withdraw(network, id, tokens) {
                    return Err(Refused::Busy);
                }
                // Granted as the wait ran out: the place is ours.
                drop(state);
                match granted.try_recv() {
                    Ok(()) => Ok(Turn { shares: self.clone(), long }),
                    Err(_) => Err(Refused::Busy),
                }
            }
        }
    }

    fn has_place(&self, state: &State, long: bool) -> bool {
        state.running < self.slots && (!long || state.running_long < self.long_slots)
    }

    /// Hands free places to waiting needs: the least used network first.
    fn dispatch(&self, state: &mut State) {
        while state.running < self.slots {
            let long_allowed = state.running_long < self.long_slots;
            let next = state
                .queues
                .iter()
                .filter(|(_, q)| {
                    q.waiters.front().is_some_and(|w| long_allowed || w.tokens <= LONG_NEED_TOKENS)
                })
                .map(|(n, _)| (*n, state.start_of(*n)))
                .min_by(|a, b| a.1.total_cmp(&b.1));
            let Some((network, _)) = next else { return };
            let queue = state.queues.get_mut(&network).expect("chosen from the queues");
            let waiter = queue.waiters.pop_front().expect("chosen for a waiter");
            if queue.waiters.is_empty() {
                state.queues.remove(&network);
            }
            state.waiting -= 1;
            let long = waiter.tokens > LONG_NEED_TOKENS;
            // A waiter whose wait ran out is gone: its place goes to the next.
            if waiter.granted.send(()).is_ok() {
                state.start(network, waiter.tokens);
                state.running += 1;
                state.running_long += usize::from(long);
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl State {
    /// When a need of `network` would start in virtual time: not before the need most recently
    /// given a place, and not before the network's last need finished.
    fn start_of(&self, network: Network) -> f64 {
        self.buckets.get(&network).map_or(self.now, |b| b.finish.max(self.now))
    }

    /// A need of `network` is given a place: its use of the model grows by the need's tokens.
    fn start(&mut self, network: Network, tokens: u32) {
        let start = self.start_of(network);
        self.now = start;
        if let Some(bucket) = self.buckets.get_mut(&network) {
            bucket.finish = start + f64::from(tokens);
        }
    }

    fn charge(&mut self, network: Network, tokens: u32) {
        if let Some(bucket) = self.buckets.get_mut(&network) {
            bucket.tokens -= f64::from(tokens);
        }
    }

    /// Takes a waiter out whose wait ran out, giving its tokens back; false when it was
    /// granted a place meanwhile.
    fn withdraw(&mut self, network: Network, id: u64, tokens: u32) -> bool {
        let Some(queue) = self.queues.get_mut(&network) else { return false };
        let Some(at) = queue.waiters.iter().position(|w| w.id == id) else { return false };
        queue.waiters.remove(at);
        if queue.waiters.is_empty() {
            self.queues.remove(&network);
        }
        self.waiting -= 1;
        if let Some(bucket) = self.buckets.get_mut(&network) {
            bucket.tokens = (bucket.tokens + f64::from(tokens)).min(SHARE_BURST_TOKENS);
        }
        true
    }

    fn forget_full_shares(&mut self, now: Instant) {
        if self.buckets.len() < SHARES_REMEMBERED {
            return;
        }
        let queues = &self.queues;
        self.buckets.retain(|network, bucket| {
            bucket.refill(now);
            bucket.tokens < SHARE_BURST_TOKENS || queues.contains_key(network)
        });
    }
}

impl Bucket {
    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * SHARE_TOKENS_PER_SECOND).min(SHARE_BURST_TOKENS);
        self.at = now;
    }
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;

    fn v4(a: u8, b: u8, c: u8, d: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(a, b, c, d))
    }

    #[test]
    fn networks_are_slash_24_and_slash_48() {
        assert_eq!(Network::of(v4(10, 1, 2, 3)), Network::of(v4(10, 1, 2, 200)));
        assert_ne!(Network::of(v4(10, 1, 2, 3)), Network::of(v4(10, 1, 3, 3)));
        let a: Ipv6Addr = "2001:db8:1:2::1".parse().unwrap();
        let b: Ipv6Addr = "2001:db8:1:ffff::9".parse().unwrap();
        let c: Ipv6Addr = "2001:db8:2::1".parse().unwrap();
        assert_eq!(Network::of(IpAddr::V6(a)), Network::of(IpAddr::V6(b)));
        assert_ne!(Network::of(IpAddr::V6(a)), Network::of(IpAddr::V6(c)));
        let mapped: Ipv6Addr = "::ffff:10.1.2.3".parse().unwrap();
        assert_eq!(Network::of(IpAddr::V6(mapped)), Network::of(v4(10, 1, 2, 9)));
        // An IPv4 network never equals an IPv6 one.
        assert_ne!(Network::of(v4(0, 0, 0, 0)), Network::of(IpAddr::V6(Ipv6Addr::UNSPECIFIED)));
    }

    #[tokio::test]
    async fn a_share_is_spent_by_tokens_and_refills() {
        let shares = Shares::new(4);
        let client = v4(10, 0, 0, 1);
        // One network's addresses share one share.
        let neighbour = v4(10, 0, 0, 2);
        let a = shares.turn(client, 512).await.expect("within the burst");
        drop(a);
        let b = shares.turn(neighbour, 512).await.expect("the rest of the burst");
        drop(b);
        assert_eq!(shares.turn(client, 30).await.err(), Some(Refused::OverShare));
        // Another network is not touched by it.
        assert!(shares.turn(v4(10, 0, 1, 1), 30).await.is_ok());
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(shares.turn(client, 30).await.is_ok(), "~50 tokens back after 200 ms");
    }

    /// Asks for a turn, notes when it came, holds it a moment (the model at work).
    fn ask(shares: &Arc<Shares>, client: IpAddr) -> tokio::task::JoinHandle<Option<Instant>> {
        let shares = shares.clone();
        tokio::spawn(async move {
            let turn = shares.turn(client, 10).await.ok()?;
            let at = Instant::now();
            tokio::time::sleep(Duration::from_millis(2)).await;
            drop(turn);
            Some(at)
        })
    }

    #[tokio::test]
    async fn the_least_used_network_goes_first() {
        let shares = Shares::new(1);
        let held = shares.turn(v4(10, 0, 0, 1), 10).await.unwrap();
        // The busy network, which holds the model now, queues three more from three addresses;
        // then a quiet network asks once.
        let mut busy = Vec::new();
        for i in 2..5 {
            busy.push(ask(&shares, v4(10, 0, 0, i)));
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let quiet = ask(&shares, v4(192, 0, 2, 1));
        tokio::time::sleep(Duration::from_millis(2)).await;
        drop(held);
        let quiet_at = quiet.await.unwrap().expect("served within the wait");
        let mut before = 0;
        for b in busy {
            let at = b.await.unwrap().expect("served within the wait");
            before += usize::from(at < quiet_at);
        }
        // The busy network had used the model already: the quiet one goes after at most one of
        // its waiting needs, though it asked last.
        assert!(before <= 1, "{before} of the busy network's needs went first");
    }

    #[tokio::test]
    async fn a_second_need_of_a_waiting_address_and_a_flood_are_refused_not_queued() {
        let shares = Shares::new(1);
        let held = shares.turn(v4(10, 0, 0, 1), 10).await.unwrap();
        let s = shares.clone();
        let first = tokio::spawn(async move { s.turn(v4(10, 0, 0, 2), 10).await.is_ok() });
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(shares.turn(v4(10, 0, 0, 2), 10).await.err(), Some(Refused::OverShare));
        // Four waiting from one network is its most.
        let mut more = Vec::new();
        for i in 3..6 {
            let s = shares.clone();
            more.push(tokio::spawn(async move { s.turn(v4(10, 0, 0, i), 10).await.is_ok() }));
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(shares.turn(v4(10, 0, 0, 9), 10).await.err(), Some(Refused::Busy));
        drop(held);
        assert!(first.await.unwrap());
        for m in more {
            assert!(m.await.unwrap());
        }
    }

    #[tokio::test]
    async fn a_wait_is_bounded() {
        let shares = Shares::new(1);
        let _held = shares.turn(v4(10, 0, 0, 1), 10).await.unwrap();
        let started = Instant::now();
        assert_eq!(shares.turn(v4(192, 0, 2, 1), 10).await.err(), Some(Refused::Busy));
        assert!(started.elapsed() >= SHARE_WAIT);
        // Its tokens came back: the share is whole again.
        let state = shares.lock();
        let bucket = &state.buckets[&Network::of(v4(192, 0, 2, 1))];
        assert!(bucket.tokens > SHARE_BURST_TOKENS - 1.0);
        assert_eq!(state.waiting, 0);
    }

    #[tokio::test]
    async fn long_needs_leave_a_core_for_short_ones() {
        let shares = Shares::new(2);
        let long = shares.turn(v4(10, 0, 0, 1), 400).await.unwrap();
        // A second long need waits for the long place although a core is free...
        let s = shares.clone();
        let second_long = tokio::spawn(async move { s.turn(v4(10, 0, 1, 1), 400).await.is_ok() });
        tokio::time::sleep(Duration::from_millis(5)).await;
        // ...which a short need takes at once, from any network.
        let started = Instant::now();
        let short = shares.turn(v4(192, 0, 2, 1), 20).await.expect("a core for short needs");
        assert!(started.elapsed() < Duration::from_millis(50));
        drop(short);
        drop(long);
        assert!(second_long.await.unwrap());
    }
}
