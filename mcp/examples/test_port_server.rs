//! Serves the in-memory test directory at `/mcp`, for poking the adapter with other clients
//! (Python SDK, MCP Inspector) before the core exists:
//! `cargo run -p agentdir-mcp --example test_port_server -- 127.0.0.1:8765`.

#[path = "../tests/common/mod.rs"]
mod common;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bind = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8765".into());
    let listener = tokio::net::TcpListener::bind(&bind).await?;
    let base = format!("http://{}", listener.local_addr()?);
    let cfg = agentdir_mcp::McpConfig::new(&base)?;
    let port = common::TestDirectory::with_agents(45);
    let app = axum::Router::new().nest_service("/mcp", agentdir_mcp::streamable_http_service(port, cfg));
    eprintln!("serving {base}/mcp");
    axum::serve(listener, app).await?;
    Ok(())
}
