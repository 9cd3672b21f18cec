//! Operator endpoints: `GET /healthz` (the process answers), `GET /readyz` (the database and
//! the search index answer) and `GET /metrics` (Prometheus text). They sit outside the route
//! table, so they are not part of the public API documents, and outside the in-flight limit, so
//! probes and scrapes still answer while the directory is saturated. `/metrics` can instead be
//! served alone on a listener of its own (`AGENTDIR_METRICS_BIND`), off the public port.

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Serialize;

use crate::app::App;
use crate::error::Error;
use crate::telemetry;

/// Where `/metrics` is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricsOn {
    /// On the main port, beside the API.
    MainPort,
    /// On a listener of its own: the main port does not serve it.
    OwnListener,
}

/// The operator routes of the main port (their paths are `middleware::OPS_ROUTES`).
pub fn routes(metrics: MetricsOn) -> Router<App> {
    let [healthz_path, readyz_path, _] = super::middleware::OPS_ROUTES;
    let router = Router::new().route(healthz_path, get(healthz)).route(readyz_path, get(readyz));
    match metrics {
        MetricsOn::MainPort => router.merge(metrics_only()),
        MetricsOn::OwnListener => router,
    }
}

/// `/metrics` alone, for the main port or a listener of its own.
pub fn metrics_only() -> Router<App> {
    let [_, _, metrics_path] = super::middleware::OPS_ROUTES;
    Router::new().route(metrics_path, get(metrics_text))
}

#[derive(Serialize)]
struct Health {
    status: &'static str,
}

async fn healthz() -> Json<Health> {
    Json(Health { status: "ok" })
}

async fn readyz(State(app): State<App>) -> Response {
    match app.readiness().await {
        // A replica whose copy stopped following is no use to a load balancer: 503, with why.
        Ok(r) if r.replica.as_ref().is_some_and(|l| l.stuck) => {
            (axum::http::StatusCode::SERVICE_UNAVAILABLE, Json(r)).into_response()
        }
        Ok(r) => Json(r).into_response(),
        // Whatever failed inside, the answer is the same to a probe: not now, ask again.
        Err(_) => Error::Overloaded.into_response(),
    }
}

async fn metrics_text(State(app): State<App>) -> Response {
    let handle = telemetry::install();
    if let Err(e) = app.publish_gauges().await {
        tracing::warn!(error = %e, "metrics: the gauges could not be read");
    }
    if let Some(replica) = app.role().replica() {
        replica.record_metrics();
    }
    handle.run_upkeep();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], handle.render()).into_response()
}
