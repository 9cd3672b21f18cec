//! Who may have a query embedded now. Embedding a query costs 2–6 ms of one core; admitted
//! without bound, sixteen clients would make every search wait for the model. An admitted
//! search keeps its place until it has been answered (the embedding and the search are one job,
//! see `App::find_agents`). A search that is not admitted does not wait: it is answered by words
//! alone (and its explanation says so).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Searches with a new need running at once, per core: one keeps a core for everything else.
/// Two per core embedded more searches under load (75 % against 66 % at 200 a second in the
/// search benchmark) and doubled the tail (p99 43 ms against 22 there, 50 against 23 with 16
/// clients back to back).
pub const QUERY_EMBEDDINGS_PER_CORE: usize = 1;
/// Searches with a new need running at once for one client address.
pub const QUERY_EMBEDDINGS_PER_CLIENT: usize = 1;

pub struct EmbeddingBudget {
    overall: usize,
    running: Mutex<(usize, HashMap<String, usize>)>,
}

/// An admitted embedding; dropping it gives its place back.
pub struct Admitted {
    budget: Arc<EmbeddingBudget>,
    client: String,
}

impl EmbeddingBudget {
    pub fn new(cores: usize) -> Arc<EmbeddingBudget> {
        Arc::new(EmbeddingBudget {
            overall: QUERY_EMBEDDINGS_PER_CORE * cores.max(1),
            running: Mutex::new((0, HashMap::new())),
        })
    }

    /// A place for `client`'s query now, or `None` when the client or the server is at its bound.
    pub fn admit(self: &Arc<Self>, client: &str) -> Option<Admitted> {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let (total, clients) = &mut *running;
        let mine = clients.get(client).copied().unwrap_or(0);
        if *total >= self.overall || mine >= QUERY_EMBEDDINGS_PER_CLIENT {
            return None;
        }
        *total += 1;
        clients.insert(client.to_string(), mine + 1);
        Some(Admitted { budget: self.clone(), client: client.to_string() })
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut running = self.budget.running.lock().unwrap_or_else(|e| e.into_inner());
        let (total, clients) = &mut *running;
        *total = total.saturating_sub(1);
        if let Some(n) = clients.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                clients.remove(&self.client);
            }
        }
    }
}
