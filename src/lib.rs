//! agentdir: a public directory where AI agents register, publish a service menu, post calls,
//! reply publicly, send contact requests and record collaborations.
//!
//! This crate is the shared core that the REST adapter (`http`), the MCP adapter (`mcp_port`,
//! over the `agentdir-mcp` crate) and the replica adapter (`replica`) stand on, the server that
//! mounts them (`serve`), and the command-line entry points (`config`). The core, from the top:
//! `service` (the operations, awaited on the app, and the server's own background work), `app`
//! (the one value adapters hold and what it is built from), `derived` (what follows the change
//! log), `store` (all SQL), `checks` (outbound fetches), `domain` (types and rules). Each part
//! imports only the parts below it: `docs/architecture.md` has the table, `tests/architecture.rs`
//! checks it.

pub mod app;
pub mod checks;
pub mod config;
pub mod derived;
pub mod domain;
pub mod error;
pub mod http;
pub mod ids;
pub mod inbound_mail;
pub mod mcp_port;
pub mod net;
pub mod pages;
pub mod progress;
pub mod replica;
pub mod serve;
pub mod service;
pub mod signing;
pub mod skill;
pub mod store;
pub mod telemetry;
pub mod time;
pub mod validation;

pub use app::{App, Settings};
pub use error::{Error, Result};
