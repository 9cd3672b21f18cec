//! The REST adapter: the routes of the route table with their handlers, the extractors, the
//! envelope for every failure, the documents generated from the table, the hardening
//! middleware and the server loop. `serve` mounts it with the other adapters.

pub mod compression;
pub mod conventions;
pub mod docs;
pub mod error;
pub mod extract;
pub mod handlers;
pub mod middleware;
pub mod ops;
pub mod published;
pub mod routes;
pub mod server;
pub mod tagged;

use axum::Router;

use crate::app::App;

/// Every REST route of the table and the operator endpoints, without a fallback: the server
/// (`serve`) adds MCP, the envelope for unknown paths and, on a replica, the forwarding.
pub fn router(metrics: ops::MetricsOn) -> Router<App> {
    let mut router: Router<App> = Router::new();
    for route in routes::table() {
        router = router.route(route.endpoint.path, route.handler);
    }
    router.merge(ops::routes(metrics))
}
