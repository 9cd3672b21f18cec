//! Polls of the agent's inbox that wait for its next event (`GET /api/me/events?wait=`): who
//! waits, at most [`WAITING_PER_AGENT`] per agent and a configured number in all, and a wake-up
//! per agent when an event of its commits. A waiting poll holds a ticket and a per-agent
//! notification, nothing else: no in-flight slot (the adapter gives it back), no database
//! connection (each look at the inbox is a short read).
//!
//! Who wakes them is `app::followers`: after each commit of this server's writer, and at the
//! background pass for the commits of other processes (inbound mail, operator commands).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::domain::events::WAITING_PER_AGENT;
use crate::error::{Error, Result};
use crate::telemetry;

/// The polls waiting now, by agent.
pub struct Waiting(Arc<Inner>);

struct Inner {
    agents: Mutex<HashMap<i64, Waiters>>,
    in_all: AtomicUsize,
    limit: usize,
    /// The newest event seq whose agents were woken.
    woken_through: Mutex<u64>,
}

/// The polls of one agent and how they are woken.
struct Waiters {
    notify: Arc<Notify>,
    polls: usize,
}

/// One waiting poll's place; leaving it (dropping the ticket) frees it.
pub struct Ticket {
    inner: Arc<Inner>,
    agent: i64,
    notify: Arc<Notify>,
}

impl Waiting {
    /// At most `limit` polls waiting in all; events up to `newest` need no waking.
    pub fn new(limit: usize, newest: u64) -> Waiting {
        Waiting(Arc::new(Inner {
            agents: Mutex::new(HashMap::new()),
            in_all: AtomicUsize::new(0),
            limit,
            woken_through: Mutex::new(newest),
        }))
    }

    /// A place for one more poll of `agent`: refused when the agent already has
    /// [`WAITING_PER_AGENT`] waiting (429), or when the server has its limit in all (503).
    pub fn enter(&self, agent: i64) -> Result<Ticket> {
        let mut agents = self.0.agents.lock().unwrap_or_else(|e| e.into_inner());
        let polls = agents.get(&agent).map_or(0, |w| w.polls);
        if polls >= WAITING_PER_AGENT {
            return Err(Error::TooManyWaitingPolls);
        }
        if self.0.in_all.load(Ordering::Acquire) >= self.0.limit {
            return Err(Error::WaitingFull);
        }
        let waiters =
            agents.entry(agent).or_insert_with(|| Waiters { notify: Arc::new(Notify::new()), polls: 0 });
        waiters.polls += 1;
        let in_all = self.0.in_all.fetch_add(1, Ordering::AcqRel) + 1;
        metrics::gauge!(telemetry::INBOX_WAITING).set(in_all as f64);
        Ok(Ticket { inner: self.0.clone(), agent, notify: waiters.notify.clone() })
    }

    /// Wakes every poll waiting for one of `agents`.
    pub fn wake(&self, agents: &[i64]) {
        let waiting = self.0.agents.lock().unwrap_or_else(|e| e.into_inner());
        for agent in agents {
            if let Some(w) = waiting.get(agent) {
                w.notify.notify_waiters();
            }
        }
    }

    /// Runs `look` with the newest event seq woken so far; it returns the agents with events
    /// since and the newest seq it saw, which are woken and remembered. One look at a time.
    pub fn wake_after(&self, look: impl FnOnce(u64) -> Result<(Vec<i64>, u64)>) -> Result<()> {
        let mut through = self.0.woken_through.lock().unwrap_or_else(|e| e.into_inner());
        let (agents, newest) = look(*through)?;
        if !agents.is_empty() {
            self.wake(&agents);
        }
        *through = newest.max(*through);
        Ok(())
    }

    /// Polls waiting now, in all.
    pub fn count(&self) -> usize {
        self.0.in_all.load(Ordering::Acquire)
    }
}

impl Ticket {
    /// What wakes this poll: register it (`Notified::enable`) before looking at the inbox, so
    /// an event committed after the look cannot be missed.
    pub fn notify(&self) -> Arc<Notify> {
        self.notify.clone()
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut agents = self.inner.agents.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(w) = agents.get_mut(&self.agent) {
            w.polls = w.polls.saturating_sub(1);
            if w.polls == 0 {
                agents.remove(&self.agent);
            }
        }
        let in_all = self.inner.in_all.fetch_sub(1, Ordering::AcqRel).saturating_sub(1);
        metrics::gauge!(telemetry::INBOX_WAITING).set(in_all as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polls_are_bounded_per_agent_and_in_all_and_freed_when_they_end() {
        let w = Waiting::new(3, 0);
        let a1 = w.enter(1).expect("first");
        let a2 = w.enter(1).expect("second");
        assert_eq!(w.enter(1).err(), Some(Error::TooManyWaitingPolls));
        let b1 = w.enter(2).expect("another agent");
        assert_eq!(w.enter(3).err(), Some(Error::WaitingFull));
        drop(a1);
        assert_eq!(w.count(), 2);
        let a3 = w.enter(1).expect("a place again");
        drop((a2, a3, b1));
        assert_eq!(w.count(), 0);
        assert!(w.0.agents.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_wake_reaches_the_polls_of_that_agent_only() {
        let w = Waiting::new(10, 0);
        let (a, b) = (w.enter(1).expect("a"), w.enter(2).expect("b"));
        let (na, nb) = (a.notify(), b.notify());
        let (fa, fb) = (na.notified(), nb.notified());
        tokio::pin!(fa, fb);
        fa.as_mut().enable();
        fb.as_mut().enable();
        w.wake_after(|through| Ok((vec![1], through + 5))).expect("look");
        tokio::time::timeout(std::time::Duration::from_secs(1), fa).await.expect("a woken");
        assert!(tokio::time::timeout(std::time::Duration::from_millis(50), fb).await.is_err(), "b woken");
        assert_eq!(*w.0.woken_through.lock().unwrap(), 5);
    }
}
