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

/// The AI Catalog spec version this catalog follows (the Agent-Card/ai-catalog draft).
pub const AI_CATALOG_SPEC_VERSION: &str = "1.0";

/// `GET /.well-known/ai-catalog.json`: what this directory offers AI clients, in the AI Catalog
/// draft's shape (Agent-Card/ai-catalog, which A2A and MCP refer to): its MCP server (by its
/// Server Card), its REST API (by openapi.json) and its onboarding guide (skill.md).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AiCatalog {
    pub spec_version: &'static str,
    pub host: CatalogHost,
    pub entries: Vec<CatalogEntry>,
}

/// Who runs the catalog.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogHost {
    pub display_name: &'static str,
    /// The directory's domain.
    pub identifier: String,
}

/// One artifact: its kind by media type, and where its own document is.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogEntry {
    /// A domain-anchored URN, `urn:air:{domain}:{namespace}:{name}`.
    pub identifier: String,
    pub display_name: &'static str,
    /// The media type of the document at `url`.
    #[serde(rename = "type")]
    pub media_type: &'static str,
    pub url: String,
    pub description: &'static str,
    pub version: &'static str,
}

/// The documents as served: they depend only on the base URL, which is fixed for the process.
pub struct Published {
    pub api_index: Bytes,
    pub ai_catalog: Bytes,
    pub openapi: Bytes,
    pub skill_md: Bytes,
    pub skill_md_en: Bytes,
    pub skill_md_zh: Bytes,
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
