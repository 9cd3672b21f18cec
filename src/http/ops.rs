//! Operator endpoints: `GET /healthz` (the process answers), `GET /readyz` (the database and
//! the search index answer) and `GET /metrics` (Prometheus text). They sit outside the route
//! table, so they are not part of the public API documents, and outside the in-flight limit, so
//! probes and scrapes still answer while the directory is saturated.

use std::sync::atomic::Ordering;
use std::time::Duration;

use agentdir_search_index::CallQuery;
use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::service::{App, Directory};
use crate::store;
use crate::telemetry;

/// How long readiness waits for a pooled connection: a pool that cannot hand one out this fast
/// is not ready for traffic either.
const READY_POOL_WAIT: Duration = Duration::from_secs(2);

/// The operator routes (their paths are `middleware::OPS_ROUTES`).
pub fn routes() -> Router<App> {
    let [healthz_path, readyz_path, metrics_path] = super::middleware::OPS_ROUTES;
    Router::new()
        .route(healthz_path, get(healthz))
        .route(readyz_path, get(readyz))
        .route(metrics_path, get(metrics_text))
}

#[derive(Serialize)]
struct Health {
    status: &'static str,
}

async fn healthz() -> Json<Health> {
    Json(Health { status: "ok" })
}

#[derive(Serialize)]
struct Readiness {
    status: &'static str,
    database: &'static str,
    search_index: &'static str,
    /// Change-log entries committed to SQLite and not yet in the index.
    index_lag: u64,
}

/// Change-log position of SQLite and of the index.
struct IndexPosition {
    committed: u64,
    applied: u64,
}

impl IndexPosition {
    fn lag(&self) -> u64 {
        self.committed.saturating_sub(self.applied)
    }
}

fn index_position(d: &Directory, wait: Duration) -> Result<IndexPosition> {
    let conn = d.readers().get_timeout(wait)?;
    let committed = store::changes::max_seq(&conn)?;
    Ok(IndexPosition { committed, applied: d.index.applied_seq() })
}

fn check_ready(d: &Directory) -> Result<Readiness> {
    let position = index_position(d, READY_POOL_WAIT).inspect_err(|e| {
        tracing::warn!(error = %e, "not ready: the database does not answer");
    })?;
    let probe = CallQuery { limit: 1, ..CallQuery::default() };
    d.index.search_calls(&probe).map_err(|e| {
        tracing::warn!(error = %e, "not ready: the search index does not answer");
        Error::Overloaded
    })?;
    Ok(Readiness { status: "ready", database: "ok", search_index: "ok", index_lag: position.lag() })
}

async fn readyz(State(app): State<App>) -> Response {
    match app.run(check_ready).await {
        Ok(r) => Json(r).into_response(),
        // Whatever failed inside, the answer is the same to a probe: not now, ask again.
        Err(_) => Error::Overloaded.into_response(),
    }
}

async fn metrics_text(State(app): State<App>) -> Response {
    let handle = telemetry::install();
    let state = app.readers().state();
    let in_use = state.connections.saturating_sub(state.idle_connections);
    metrics::gauge!(telemetry::POOL_CONNECTIONS, "state" => "idle").set(f64::from(state.idle_connections));
    metrics::gauge!(telemetry::POOL_CONNECTIONS, "state" => "in_use").set(f64::from(in_use));
    metrics::gauge!(telemetry::POOL_MAX).set(f64::from(app.readers().max_size()));
    let (views, bytes) = app.views.size();
    metrics::gauge!(telemetry::VIEW_CACHE_VIEWS).set(views as f64);
    metrics::gauge!(telemetry::VIEW_CACHE_BYTES).set(bytes as f64);
    metrics::counter!(telemetry::VIEW_CACHE_HITS).absolute(app.views.hits.load(Ordering::Relaxed));
    metrics::counter!(telemetry::VIEW_CACHE_MISSES).absolute(app.views.misses.load(Ordering::Relaxed));
    match app.run(|d| index_position(d, READY_POOL_WAIT)).await {
        Ok(p) => {
            metrics::gauge!(telemetry::INDEX_LAG).set(p.lag() as f64);
            metrics::gauge!(telemetry::INDEX_APPLIED).set(p.applied as f64);
        }
        Err(e) => tracing::warn!(error = %e, "metrics: could not read the change log position"),
    }
    handle.run_upkeep();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], handle.render()).into_response()
}
