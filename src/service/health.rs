//! What the operator endpoints report: readiness (the database and the search index answer)
//! and the gauges published in `/metrics`.

use std::time::Duration;

use agentdir_search_index::CallQuery;
use serde::Serialize;

use super::App;
use crate::app::Replica;
use crate::error::{Error, Result};
use crate::store;
use crate::store::positions::ChangeSeq;
use crate::telemetry;

/// How long readiness waits for a pooled connection: a pool that cannot hand one out this fast
/// is not ready for traffic either.
const READY_POOL_WAIT: Duration = Duration::from_secs(2);

#[derive(Debug, Serialize)]
pub struct Readiness {
    pub status: &'static str,
    pub database: &'static str,
    pub search_index: &'static str,
    /// Change-log entries committed to SQLite and not yet in the index.
    pub index_lag: u64,
    /// The write position: the newest write on a primary, what the copy holds on a replica
    /// (replicas poll it from the primary; see `replica`).
    pub seq: u64,
    /// Search by meaning: on or off (and why), and how many agents have their vector.
    pub meaning: crate::app::model::ModelStatus,
    /// On a replica: how far behind the primary it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replica: Option<crate::app::role::Lag>,
}

/// Change-log position of SQLite and of the index.
struct IndexPosition {
    committed: ChangeSeq,
    applied: ChangeSeq,
}

impl IndexPosition {
    fn lag(&self) -> u64 {
        self.committed.get().saturating_sub(self.applied.get())
    }
}

impl App {
    fn index_position(&self) -> Result<IndexPosition> {
        let conn = self.readers().get_timeout(READY_POOL_WAIT)?;
        let committed = store::changes::max_seq(&conn)?;
        Ok(IndexPosition { committed, applied: ChangeSeq::new(self.index.applied_seq()) })
    }

    /// Ready when a pooled connection reads the change log in time and the index answers a
    /// query; any failure is `Overloaded` (to a probe: not now, ask again).
    pub async fn readiness(&self) -> Result<Readiness> {
        self.blocking(move |app| {
            let position = app.index_position().map_err(|e| {
                tracing::warn!(error = %e, "not ready: the database does not answer");
                Error::Overloaded
            })?;
            let probe = CallQuery { limit: 1, ..CallQuery::default() };
            app.index.search_calls(&probe).map_err(|e| {
                tracing::warn!(error = %e, "not ready: the search index does not answer");
                Error::Overloaded
            })?;
            let lag = app.role().replica().map(Replica::lag);
            let seq = app.written().get();
            let status = if lag.as_ref().is_some_and(|l| l.stuck) { "stuck" } else { "ready" };
            Ok(Readiness {
                status,
                database: "ok",
                search_index: "ok",
                index_lag: position.lag(),
                seq,
                meaning: app.model_status(),
                replica: lag,
            })
        })
        .await
    }

    /// Sets the gauges of the connection pool, the view cache and the index position.
    pub async fn publish_gauges(&self) -> Result<()> {
        self.blocking(|app| {
            app.publish_gauges_now();
            Ok(())
        })
        .await
    }

    fn publish_gauges_now(&self) {
        let state = self.readers().state();
        let in_use = state.connections.saturating_sub(state.idle_connections);
        metrics::gauge!(telemetry::POOL_CONNECTIONS, "state" => "idle")
            .set(f64::from(state.idle_connections));
        metrics::gauge!(telemetry::POOL_CONNECTIONS, "state" => "in_use").set(f64::from(in_use));
        metrics::gauge!(telemetry::POOL_SIZE).set(f64::from(self.readers().max_size()));
        let (views, bytes) = self.cache.size();
        metrics::gauge!(telemetry::VIEW_CACHE_VIEWS).set(views as f64);
        metrics::gauge!(telemetry::VIEW_CACHE_BYTES).set(bytes as f64);
        metrics::counter!(telemetry::VIEW_CACHE_HITS).absolute(self.cache.hits());
        metrics::counter!(telemetry::VIEW_CACHE_MISSES).absolute(self.cache.misses());
        match self.index_position() {
            Ok(p) => {
                metrics::gauge!(telemetry::INDEX_LAG).set(p.lag() as f64);
                metrics::gauge!(telemetry::INDEX_APPLIED).set(p.applied.get() as f64);
            }
            Err(e) => tracing::warn!(error = %e, "metrics: could not read the change log position"),
        }
    }
}
