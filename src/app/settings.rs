//! The settings of the core, filled once by the CLI from flags and environment.

use std::path::PathBuf;

use crate::app::limits::RateSettings;
use crate::store;

/// Settings of the core (the CLI fills them from flags and environment).
#[derive(Debug, Clone)]
pub struct Settings {
    pub data_dir: PathBuf,
    pub base_url: String,
    pub mail_domain: String,
    pub mail_authserv_id: String,
    pub rates: RateSettings,
    pub link_fetch_allow_private: crate::checks::link_fetch::PrivateTargets,
    /// Peers whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Link-proof fetches under way at once, in all: a share of the in-flight slots
    /// (`domain::trust::LINK_FETCH_SHARE_OF_SLOTS`).
    pub link_fetches_at_once: usize,
    /// Read-only SQLite connections of the server and how long a read waits for one.
    pub read_pool: store::ReadPool,
    /// How long the change feed remembers deletions, in milliseconds.
    pub changes_retention_ms: i64,
    /// Memory for rendered cards and calls, in bytes.
    pub view_cache_bytes: usize,
    /// Cards one sitemap lists; past it `/sitemap.xml` is an index of sitemaps.
    pub sitemap_urls: u32,
    /// Handles refused at registration and rename.
    pub reserved_handles: crate::domain::handles::ReservedHandles,
    /// How often listed endpoints are checked again (jittered).
    pub endpoint_check_interval: std::time::Duration,
    /// Search by meaning: the mode and where the model is.
    pub model: crate::app::model::ModelSettings,
    /// Polls of the agents' inboxes that may wait at once, in all.
    pub max_waiting: usize,
    /// The longest a poll of an inbox waits: the asked `wait`, at most this (below the request
    /// timeout).
    pub longest_wait: std::time::Duration,
}
