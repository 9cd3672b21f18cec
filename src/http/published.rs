//! The documents of this process as served — the `GET /api` index, openapi.json and skill.md —
//! built once by `docs::publish` from the route table and read by the handlers that serve them,
//! and the shape of the index.

use std::sync::OnceLock;

use axum::body::Bytes;
use schemars::JsonSchema;
use serde::Serialize;

use crate::domain::notice::Notice;

#[derive(Debug, Serialize, JsonSchema)]
pub struct EndpointInfo {
    pub method: String,
    pub path: String,
    /// `public` or `key` (bearer API key).
    #[schemars(extend("enum" = ["public", "key"]))]
    pub auth: &'static str,
    pub summary: &'static str,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Links {
    pub skill: String,
    pub openapi: String,
    pub mcp: String,
}

/// `GET /api`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ApiIndex {
    pub notice: Notice,
    pub name: &'static str,
    pub version: &'static str,
    pub links: Links,
    pub endpoints: Vec<EndpointInfo>,
}

/// The documents as served: they depend only on the base URL, which is fixed for the process.
pub struct Published {
    pub api_index: Bytes,
    pub openapi: Bytes,
    pub skill_md: Bytes,
}

static PUBLISHED: OnceLock<Published> = OnceLock::new();

/// The documents `build` makes, built once: a later call returns the first ones.
pub(super) fn publish_with(build: impl FnOnce() -> Published) -> &'static Published {
    PUBLISHED.get_or_init(build)
}

/// The documents `docs::publish` built.
pub fn published() -> &'static Published {
    PUBLISHED.get().expect("the router publishes the documents before it serves them")
}
