//! Where the CPU of one search goes: the query set runs back to back, once per phase of what
//! the REST handlers do — the change-log check (`App::catch_up`), the index query, the SQLite
//! hydration of the page of keys it returned, each on the calling thread, and the whole
//! operation as handlers await it (one search at a time, so its permit is always free) — each
//! timed as process CPU over every search of the set: the pure cost of each phase. The index query also runs with a page of 0, which leaves only
//! the matching and the exact total: what counting costs.

use std::fmt;

use agentdir::App;
use agentdir::derived::views;
use agentdir_search_index::{IndexError, Page};

use crate::Error;
use crate::measure::process_cpu;
use crate::queries::{Query, Target};

pub struct Breakdown {
    pub sync: f64,
    pub index: f64,
    /// The index query for a page of 0: matching and the exact total only.
    pub count: f64,
    pub hydrate: f64,
    pub whole: f64,
}

impl fmt::Display for Breakdown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "change-log check {:.3} + index {:.3} + hydration {:.3} = {:.3}; whole service call {:.3}; \
             index with a page of 0 (total only) {:.3}",
            self.sync,
            self.index,
            self.hydrate,
            self.sync + self.index + self.hydrate,
            self.whole,
            self.count
        )
    }
}

/// CPU ms per search of each phase over `rounds` passes of `qs`.
pub fn measure(
    app: &App,
    runtime: &tokio::runtime::Runtime,
    qs: &[Query],
    rounds: usize,
    index_page: fn(&App, &Query, usize) -> Result<Page, IndexError>,
) -> Result<Breakdown, Error> {
    let n = (qs.len() * rounds).max(1) as f64;
    let per_search = |started: std::time::Duration| (process_cpu() - started).as_secs_f64() * 1e3 / n;

    let started = process_cpu();
    for _ in 0..rounds {
        for _ in qs {
            app.catch_up()?;
        }
    }
    let sync = per_search(started);

    let mut pages = Vec::with_capacity(qs.len());
    let started = process_cpu();
    for round in 0..rounds {
        for q in qs {
            let page = index_page(app, q, crate::queries::LIMIT as usize).map_err(|e| e.to_string())?;
            if round == 0 {
                pages.push(page.keys.iter().map(|k| *k as i64).collect::<Vec<i64>>());
            }
        }
    }
    let index = per_search(started);

    let started = process_cpu();
    for _ in 0..rounds {
        for q in qs {
            index_page(app, q, 0).map_err(|e| e.to_string())?;
        }
    }
    let count = per_search(started);

    let pool = agentdir::store::open(&app.settings().data_dir, 1).map_err(|e| e.to_string())?;
    let conn = pool.get()?;
    let now = agentdir::time::now_ms();
    let started = process_cpu();
    for _ in 0..rounds {
        for (q, keys) in qs.iter().zip(&pages) {
            match q.target {
                Some(Target::Calls) => drop(views::calls_by_keys(&conn, keys)?),
                _ => drop(views::agents_by_ids(&conn, keys, now)?),
            }
        }
    }
    let hydrate = per_search(started);
    drop(conn);

    let started = process_cpu();
    for _ in 0..rounds {
        for q in qs {
            match q.target {
                Some(Target::Calls) => drop(runtime.block_on(app.search_calls(q.call_search()))?),
                _ => drop(runtime.block_on(app.search_agents(q.agent_search()))?),
            }
        }
    }
    let whole = per_search(started);
    Ok(Breakdown { sync, index, count, hydrate, whole })
}
