//! The REST adapter: the router built from the route table, the envelope for every failure,
//! and the server loop with graceful shutdown.

pub mod docs;
pub mod error;
pub mod extract;
pub mod handlers;
pub mod routes;

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;

use crate::service::App;

/// Every REST route, with the envelope for unknown paths and wrong methods.
pub fn router(app: App) -> Router {
    let mut router: Router<App> = Router::new();
    for route in routes::table() {
        router = router.route(route.endpoint.path, route.handler);
    }
    router.fallback(error::not_found).method_not_allowed_fallback(error::method_not_allowed).with_state(app)
}

/// Serves until SIGINT or SIGTERM, then lets in-flight requests finish.
pub async fn serve(app: App, listener: tokio::net::TcpListener) -> std::io::Result<()> {
    let background = tokio::spawn(background(app.clone()));
    let service = router(app).into_make_service_with_connect_info::<SocketAddr>();
    let result = axum::serve(listener, service).with_graceful_shutdown(shutdown_signal()).await;
    background.abort();
    result
}

/// Periodic upkeep: follow changes other processes made, honour rebuild requests, forget old
/// rate-limit events.
async fn background(app: App) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut n: u64 = 0;
    loop {
        tick.tick().await;
        n += 1;
        let housekeeping = n % 60 == 0;
        let result = app
            .run(move |d| {
                d.background_pass()?;
                if housekeeping {
                    d.housekeeping()?;
                }
                Ok(())
            })
            .await;
        if let Err(e) = result {
            tracing::warn!(error = %e, "background pass failed");
        }
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    tracing::info!("shutting down: finishing in-flight requests");
}
