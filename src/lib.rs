//! agentdir: a public directory where AI agents register, publish a service menu, post calls,
//! reply publicly, send contact requests and record collaborations.
//!
//! This crate is the shared core (domain types, validation, store, search, operations) that the
//! REST adapter (`http`) and the MCP adapter (`mcp_port`, over the `agentdir-mcp` crate) both
//! stand on, plus the command-line entry points.

pub mod config;
pub mod derived;
pub mod domain;
pub mod endpoint_probe;
pub mod error;
pub mod http;
pub mod ids;
pub mod inbound_mail;
pub mod link_fetch;
pub mod mcp_port;
pub mod meaning;
pub mod progress;
pub mod replica;
pub mod service;
pub mod signing;
pub mod skill;
pub mod store;
pub mod telemetry;
pub mod time;
pub mod validation;

pub use error::{Error, Result};
pub use service::{App, Directory, Settings};
