//! Fair shares of the model's time for reading needs. Each client network (an IPv4 /24, an
//! IPv6 /48) has a share: a bucket of need tokens that refills at [`SHARE_TOKENS_PER_SECOND`]
//! up to [`SHARE_BURST_TOKENS`], charged by the tokens of each need the model reads, so a long
//! need costs more than a short one and a client asking one search at a time at a normal rate
//! (~10 a second) never runs it dry. Within its share a need is read at once when the model has
//! a free place and nobody waits; else it waits in fair order — the network that used the least
//! of its share lately goes first, equals (and any need that waited [`QUEUE_AGE`]) in the order
//! they asked — for at most [`SHARE_WAIT`]. A need beyond its share, a second need of an address that already
//! waits, a need that found the queue full or one that waited its longest is refused here, and
//! the caller reads it more cheaply (the quick encoder) or by words. Nothing queues without
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
/// Need tokens a network may spend at once: ~150 short needs or eight as long as the model
/// reads, so a client may read a judged set or page through needs at full speed, while a
/// flood from one network is held to the rate after about a second of one core.
pub const SHARE_BURST_TOKENS: f64 = 4_096.0;
/// Past this many tokens a need is long (a paragraph): long needs hold all cores but one.
pub const LONG_NEED_TOKENS: u32 = 64;
/// Networks whose use of their share differs by less than this many tokens (a paragraph) are
/// served in the order they asked.
pub const EQUAL_USE_TOKENS: f64 = 64.0;
/// A need that has waited this long is served in the order it asked, whatever its network used.
pub const QUEUE_AGE: Duration = Duration::from_millis(100);
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

/// A network's share: how many tokens it holds at most and how fast they come back.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShareSize {
    pub tokens_per_second: f64,
    pub burst_tokens: f64,
}

impl Default for ShareSize {
    fn default() -> Self {
        ShareSize { tokens_per_second: SHARE_TOKENS_PER_SECOND, burst_tokens: SHARE_BURST_TOKENS }
    }
}

/// Why a need is not read by the model now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum Refused {
    /// The network's share is spent, or the address already has a need waiting.
    OverShare,
    /// Within its share, but the model was busy for longer than [`SHARE_WAIT`].
    Busy,
    /// Within its share, but [`WAITING_PER_NETWORK`] needs of its network, or
    /// [`WAITING_AT_MOST`] in all, were waiting already.
    QueueFull,
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
    /// Every network's share; set at start, changed only by [`Shares::resize`].
    size: ShareSize,
    running: usize,
    running_long: usize,
    buckets: HashMap<Network, Bucket>,
    queues: HashMap<Network, Queue>,
    waiting: usize,
    next_id: u64,
}

/// A network's share: its bucket of tokens, as of `at`.
struct Bucket {
    tokens: f64,
    at: Instant,
}

#[derive(Default)]
struct Queue {
    waiters: VecDeque<Waiter>,
}

struct Waiter {
    id: u64,
    asked: Instant,
    address: IpAddr,
    tokens: u32,
    granted: oneshot::Sender<()>,
}

impl Shares {
    /// One place per core, every network's share of `size`.
    pub fn new(cores: usize, size: ShareSize) -> Arc<Shares> {
        let slots = cores.max(1);
        let state = Mutex::new(State { size, ..State::default() });
        Arc::new(Shares { slots, long_slots: (slots - 1).max(1), state })
    }

    /// Every network's share.
    pub fn size(&self) -> ShareSize {
        self.lock().size
    }

    /// Gives every network a share of `size` from now on (the benchmarks measure the quick
    /// encoder with a share of 0); a bucket fuller than the new burst is cut to it.
    pub fn resize(&self, size: ShareSize) {
        let mut state = self.lock();
        state.size = size;
        for bucket in state.buckets.values_mut() {
            bucket.tokens = bucket.tokens.min(size.burst_tokens);
        }
    }

    /// A place at the model for a need of `tokens` from `client`, now or after a fair wait.
    pub async fn turn(self: &Arc<Self>, client: IpAddr, tokens: u32) -> Result<Turn, Refused> {
        let network = Network::of(client);
        let long = tokens > LONG_NEED_TOKENS;
        let (id, granted) = {
            let mut state = self.lock();
            let now = Instant::now();
            let size = state.size;
            state.forget_full_shares(now, size);
            let bucket =
                state.buckets.entry(network).or_insert(Bucket { tokens: size.burst_tokens, at: now });
            bucket.refill(now, size);
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
                state.running += 1;
                state.running_long += usize::from(long);
                return Ok(Turn { shares: self.clone(), long });
            }
            if state.waiting >= WAITING_AT_MOST
                || queue.is_some_and(|q| q.waiters.len() >= WAITING_PER_NETWORK)
            {
                return Err(Refused::QueueFull);
            }
            state.charge(network, tokens);
            let (sender, receiver) = oneshot::channel();
            let id = state.next_id;
            state.next_id += 1;
            let queue = state.queues.entry(network).or_default();
            queue.waiters.push_back(Waiter { id, asked: now, address: client, tokens, granted: sender });
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
                let size = state.size;
                if state.withdraw(network, id, tokens, size) {
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

    /// Hands free places to waiting needs: the network that has used the least of its share
    /// first (its waiting needs are charged already, so a network that queues many goes after
    /// one that queues few), networks whose use differs by less than [`EQUAL_USE_TOKENS`] in
    /// the order they asked. A client asking one short need at a time uses less than that (its
    /// share refills between its needs), so it waits only for needs asked before it, however
    /// many fresh networks ask after it. A need that has waited [`QUEUE_AGE`] goes in the order
    /// it asked whatever its network used, so a client within its share that asks faster is
    /// not starved by a flood from ever new networks.
    fn dispatch(&self, state: &mut State) {
        let now = Instant::now();
        let size = state.size;
        while state.running < self.slots {
            let long_allowed = state.running_long < self.long_slots;
            let next = state
                .queues
                .iter()
                .filter_map(|(n, q)| {
                    let w = q.waiters.front()?;
                    let used = size.burst_tokens - state.left(*n, now, size);
                    let aged = now.saturating_duration_since(w.asked) >= QUEUE_AGE;
                    let step = if aged { 0 } else { (used.max(0.0) / EQUAL_USE_TOKENS) as u64 };
                    (long_allowed || w.tokens <= LONG_NEED_TOKENS).then_some((*n, step, w.id))
                })
                .min_by_key(|(_, step, id)| (*step, *id));
            let Some((network, _, _)) = next else { return };
            let queue = state.queues.get_mut(&network).expect("chosen from the queues");
            let waiter = queue.waiters.pop_front().expect("chosen for a waiter");
            if queue.waiters.is_empty() {
                state.queues.remove(&network);
            }
            state.waiting -= 1;
            let long = waiter.tokens > LONG_NEED_TOKENS;
            // A waiter whose wait ran out is gone: its place goes to the next.
            if waiter.granted.send(()).is_ok() {
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
    /// The tokens `network` has left as of `now` (a full share when it has no bucket).
    fn left(&self, network: Network, now: Instant, size: ShareSize) -> f64 {
        self.buckets.get(&network).map_or(size.burst_tokens, |b| b.level(now, size))
    }

    fn charge(&mut self, network: Network, tokens: u32) {
        if let Some(bucket) = self.buckets.get_mut(&network) {
            bucket.tokens -= f64::from(tokens);
        }
    }

    /// Takes a waiter out whose wait ran out, giving its tokens back; false when it was
    /// granted a place meanwhile.
    fn withdraw(&mut self, network: Network, id: u64, tokens: u32, size: ShareSize) -> bool {
        let Some(queue) = self.queues.get_mut(&network) else { return false };
        let Some(at) = queue.waiters.iter().position(|w| w.id == id) else { return false };
        queue.waiters.remove(at);
        if queue.waiters.is_empty() {
            self.queues.remove(&network);
        }
        self.waiting -= 1;
        if let Some(bucket) = self.buckets.get_mut(&network) {
            bucket.tokens = (bucket.tokens + f64::from(tokens)).min(size.burst_tokens);
        }
        true
    }

    fn forget_full_shares(&mut self, now: Instant, size: ShareSize) {
        if self.buckets.len() < SHARES_REMEMBERED {
            return;
        }
        let queues = &self.queues;
        self.buckets.retain(|network, bucket| {
            bucket.refill(now, size);
            bucket.tokens < size.burst_tokens || queues.contains_key(network)
        });
    }
}

impl Bucket {
    fn level(&self, now: Instant, size: ShareSize) -> f64 {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        (self.tokens + elapsed * size.tokens_per_second).min(size.burst_tokens)
    }

    fn refill(&mut self, now: Instant, size: ShareSize) {
        self.tokens = self.level(now, size);
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

    /// A share small enough to spend in a test: two needs of 512 tokens.
    const SMALL: ShareSize = ShareSize { tokens_per_second: 256.0, burst_tokens: 1_024.0 };

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
        let shares = Shares::new(4, SMALL);
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

    #[tokio::test]
    async fn a_share_resized_holds_from_then_on() {
        let shares = Shares::new(4, SMALL);
        let client = v4(10, 0, 0, 1);
        assert!(shares.turn(client, 30).await.is_ok());
        shares.resize(ShareSize { tokens_per_second: 0.0, burst_tokens: 0.0 });
        assert_eq!(shares.size().burst_tokens, 0.0);
        // The network that had tokens left and one never seen are both past a share of 0.
        assert_eq!(shares.turn(client, 30).await.err(), Some(Refused::OverShare));
        assert_eq!(shares.turn(v4(10, 0, 9, 1), 30).await.err(), Some(Refused::OverShare));
        shares.resize(SMALL);
        // A network never seen gets the new burst; the one cut to 0 refills from 0 (1,000
        // tokens take it ~4 s).
        assert!(shares.turn(v4(10, 0, 8, 1), 1_000).await.is_ok());
        assert_eq!(shares.turn(client, 1_000).await.err(), Some(Refused::OverShare));
    }

    /// Asks for a turn, notes when it came, holds it a moment (the model at work).
    fn ask(shares: &Arc<Shares>, client: IpAddr) -> tokio::task::JoinHandle<Option<Instant>> {
        ask_for(shares, client, 10)
    }

    fn ask_for(
        shares: &Arc<Shares>,
        client: IpAddr,
        tokens: u32,
    ) -> tokio::task::JoinHandle<Option<Instant>> {
        let shares = shares.clone();
        tokio::spawn(async move {
            let turn = shares.turn(client, tokens).await.ok()?;
            let at = Instant::now();
            tokio::time::sleep(Duration::from_millis(2)).await;
            drop(turn);
            Some(at)
        })
    }

    #[tokio::test]
    async fn the_least_used_network_goes_first() {
        let shares = Shares::new(1, SMALL);
        let held = shares.turn(v4(10, 0, 0, 1), 60).await.unwrap();
        // The busy network, which holds the model now, queues three more from three addresses;
        // then a quiet network asks once.
        let mut busy = Vec::new();
        for i in 2..5 {
            busy.push(ask_for(&shares, v4(10, 0, 0, i), 30));
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
    async fn a_need_within_its_share_waits_only_for_those_asked_before_it_however_many_networks_flood() {
        let shares = Shares::new(1, ShareSize::default());
        // The client used a little of its share a moment ago; the flood comes from networks
        // never seen, each with its whole share.
        drop(shares.turn(v4(192, 0, 2, 1), 20).await.unwrap());
        let held = shares.turn(v4(10, 0, 0, 1), 10).await.unwrap();
        let mut flood = Vec::new();
        for i in 0..3u8 {
            flood.push(ask(&shares, v4(10, 1, i, 1)));
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let client = ask(&shares, v4(192, 0, 2, 1));
        tokio::time::sleep(Duration::from_millis(2)).await;
        // More fresh networks keep asking after it.
        for i in 3..40u8 {
            flood.push(ask(&shares, v4(10, 1, i, 1)));
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
        drop(held);
        let client_at = client.await.unwrap().expect("served within the wait");
        let mut before = 0;
        for f in flood {
            if let Some(at) = f.await.unwrap() {
                before += usize::from(at < client_at);
            }
        }
        // It used less than a paragraph of its share, as the fresh networks did: it waits for
        // the three that asked before it, not for the flood after it.
        assert_eq!(before, 3, "{before} of the flood went first");
    }

    #[tokio::test]
    async fn a_client_that_used_much_of_its_share_waits_at_most_the_age_then_goes_in_turn() {
        let shares = Shares::new(1, ShareSize::default());
        // The client used a good part of its share (it asks fast, within its burst).
        drop(shares.turn(v4(192, 0, 2, 1), 500).await.unwrap());
        let held = shares.turn(v4(10, 0, 0, 1), 10).await.unwrap();
        let client = ask(&shares, v4(192, 0, 2, 1));
        tokio::time::sleep(Duration::from_millis(2)).await;
        // A flood from ever new networks, each need holding the model 2 ms, for ~0.4 s.
        let flooding = {
            let shares = shares.clone();
            tokio::spawn(async move {
                let mut asked = Vec::new();
                for i in 0..200u32 {
                    asked.push(ask(&shares, v4(10, 1 + (i / 250) as u8, (i % 250) as u8, 1)));
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                asked
            })
        };
        tokio::time::sleep(Duration::from_millis(2)).await;
        let freed = Instant::now();
        drop(held);
        let served = client.await.unwrap().expect("served within the wait");
        assert!(served.duration_since(freed) < QUEUE_AGE * 3, "{:?}", served.duration_since(freed));
        for f in flooding.await.unwrap() {
            let _ = f.await;
        }
    }

    #[tokio::test]
    async fn a_second_need_of_a_waiting_address_and_a_flood_are_refused_not_queued() {
        let shares = Shares::new(1, SMALL);
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
        assert_eq!(shares.turn(v4(10, 0, 0, 9), 10).await.err(), Some(Refused::QueueFull));
        drop(held);
        assert!(first.await.unwrap());
        for m in more {
            assert!(m.await.unwrap());
        }
    }

    #[tokio::test]
    async fn a_wait_is_bounded() {
        let shares = Shares::new(1, SMALL);
        let _held = shares.turn(v4(10, 0, 0, 1), 10).await.unwrap();
        let started = Instant::now();
        assert_eq!(shares.turn(v4(192, 0, 2, 1), 10).await.err(), Some(Refused::Busy));
        assert!(started.elapsed() >= SHARE_WAIT);
        // Its tokens came back: the share is whole again.
        let state = shares.lock();
        let bucket = &state.buckets[&Network::of(v4(192, 0, 2, 1))];
        assert!(bucket.tokens > SMALL.burst_tokens - 1.0);
        assert_eq!(state.waiting, 0);
    }

    #[tokio::test]
    async fn long_needs_leave_a_core_for_short_ones() {
        let shares = Shares::new(2, SMALL);
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
