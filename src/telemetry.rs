//! Prometheus metrics: the one recorder of the process, the names of every series the
//! directory publishes, and the gauges that are only worth computing when someone scrapes.
//!
//! Series are recorded through the `metrics` facade wherever the event happens (middleware,
//! rate limits); `GET /metrics` renders them with `metrics-exporter-prometheus`.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

pub const HTTP_REQUESTS: &str = "agentdir_http_requests_total";
pub const HTTP_DURATION: &str = "agentdir_http_request_duration_seconds";
pub const HTTP_IN_FLIGHT: &str = "agentdir_http_requests_in_flight";
pub const HTTP_SHED: &str = "agentdir_http_requests_shed_total";
pub const HTTP_TIMEOUTS: &str = "agentdir_http_request_timeouts_total";
pub const CONNECTIONS_OPEN: &str = "agentdir_http_connections_open";
pub const CONNECTIONS_REFUSED: &str = "agentdir_http_connections_refused_total";
pub const BODY_TIMEOUTS: &str = "agentdir_http_body_timeouts_total";
pub const RATE_LIMITED: &str = "agentdir_rate_limited_total";
/// Searches answered by words alone because neither encoder could read the need now.
pub const MEANING_BUSY: &str = "agentdir_search_meaning_busy_total";
/// Needs read for a search, by which encoder (`full`, `quick`, or `words_busy` for neither) and
/// why (`within_share`; past it: `over_share`, `busy`, `queue_full`).
pub const NEEDS_READ: &str = "agentdir_search_needs_read_total";
/// How long a need waited for its turn at the model (granted or not).
pub const SHARE_WAIT: &str = "agentdir_search_share_wait_seconds";
/// Searches whose need was read lately: its vector came from memory, not from the model.
pub const MEANING_REMEMBERED: &str = "agentdir_search_meaning_remembered_total";
/// Profiles the model embedded for a registration or a profile write.
pub const PROFILE_EMBEDDINGS: &str = "agentdir_profile_embeddings_total";
pub const INDEX_LAG: &str = "agentdir_search_index_lag";
pub const INDEX_APPLIED: &str = "agentdir_search_index_applied_seq";
pub const POOL_CONNECTIONS: &str = "agentdir_db_pool_connections";
pub const POOL_SIZE: &str = "agentdir_db_pool_size";
pub const VIEW_CACHE_HITS: &str = "agentdir_view_cache_hits_total";
pub const VIEW_CACHE_MISSES: &str = "agentdir_view_cache_misses_total";
pub const VIEW_CACHE_BYTES: &str = "agentdir_view_cache_bytes";
pub const VIEW_CACHE_VIEWS: &str = "agentdir_view_cache_views";
pub const WRITE_BATCH_SIZE: &str = "agentdir_write_batch_size";
pub const WRITE_BATCH_SECONDS: &str = "agentdir_write_batch_seconds";
pub const ENDPOINT_CHECKS: &str = "agentdir_endpoint_checks_total";
pub const ENDPOINT_CHECK_SECONDS: &str = "agentdir_endpoint_check_seconds";
pub const ENDPOINT_LAST_CHECK: &str = "agentdir_endpoint_last_check_timestamp_seconds";
pub const ENDPOINTS_SCHEDULED: &str = "agentdir_endpoints_scheduled";
/// Polls of the agents' inboxes waiting for an event now.
pub const INBOX_WAITING: &str = "agentdir_inbox_polls_waiting";
pub const REPLICA_SEQ_BEHIND: &str = "agentdir_replica_seq_behind";
pub const REPLICA_SECONDS_BEHIND: &str = "agentdir_replica_seconds_behind";
pub const REPLICA_APPLIED: &str = "agentdir_replica_applied_seq";
pub const REPLICA_PRIMARY_SEQ: &str = "agentdir_replica_primary_seq";

/// Latency buckets in seconds: most answers take a few milliseconds; link proofs take seconds.
const LATENCY_BUCKETS: &[f64] =
    &[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the process-wide recorder once and returns the handle that renders it. If another
/// recorder was installed first (an embedding program), the handle renders an empty registry
/// rather than failing the server.
pub fn install() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let builder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Full(HTTP_DURATION.to_owned()), LATENCY_BUCKETS)
            .and_then(|b| {
                b.set_buckets_for_metric(Matcher::Full(ENDPOINT_CHECK_SECONDS.to_owned()), LATENCY_BUCKETS)
            })
            .and_then(|b| b.set_buckets_for_metric(Matcher::Full(SHARE_WAIT.to_owned()), LATENCY_BUCKETS))
            .unwrap_or_else(|_| PrometheusBuilder::new());
        let recorder = builder.build_recorder();
        let handle = recorder.handle();
        if let Err(e) = metrics::set_global_recorder(recorder) {
            tracing::warn!(error = %e, "a metrics recorder was already installed; /metrics will be empty");
        }
        describe();
        handle
    })
}

fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!(HTTP_REQUESTS, "HTTP requests answered, by route template, method and status.");
    describe_counter!(
        MEANING_BUSY,
        "Agent searches answered by words alone: neither the model (the client's share, or a place within the wait) nor the quick encoder (no word of the need in its table) could read the need."
    );
    describe_counter!(
        NEEDS_READ,
        "Needs of agent searches read, by encoder (full: the model; quick: the quick encoder; words_busy: neither) and reason (within_share; over_share, busy, queue_full: why the model did not read it)."
    );
    describe_histogram!(
        SHARE_WAIT,
        "Time a need waited for its turn at the model under the fair shares, granted or refused."
    );
    describe_counter!(
        MEANING_REMEMBERED,
        "Agent searches whose need was read lately: its vector came from memory, not from the model."
    );
    describe_counter!(
        PROFILE_EMBEDDINGS,
        "Profiles the model embedded for a registration or a profile write (a text already embedded is reused, not counted)."
    );
    describe_histogram!(
        HTTP_DURATION,
        "Time to answer an HTTP request, by route template, method and status."
    );
    describe_gauge!(HTTP_IN_FLIGHT, "HTTP requests being answered right now.");
    describe_counter!(
        HTTP_SHED,
        "Requests refused with 503 after waiting the queue wait for one of the in-flight slots."
    );
    describe_counter!(HTTP_TIMEOUTS, "Requests stopped by the request timeout.");
    describe_gauge!(CONNECTIONS_OPEN, "Open client connections.");
    describe_counter!(
        CONNECTIONS_REFUSED,
        "Client connections closed at once because too many were open, by reason (total or per_client)."
    );
    describe_counter!(BODY_TIMEOUTS, "Requests answered 408 because their body did not arrive in time.");
    describe_counter!(RATE_LIMITED, "Requests refused with 429 by a rate limit, by limit.");
    describe_gauge!(INDEX_LAG, "Search-index change-log entries committed to SQLite but not yet applied.");
    describe_gauge!(INDEX_APPLIED, "Change-log sequence number the search index has applied.");
    describe_gauge!(POOL_CONNECTIONS, "SQLite pool connections, by state (idle or in_use).");
    describe_gauge!(POOL_SIZE, "Read connections the SQLite pool may hold.");
    describe_gauge!(INBOX_WAITING, "Polls of GET /api/me/events waiting for an event now.");
    describe_counter!(
        agentdir_mcp::FAST_ANSWERS,
        "MCP reads of a card or a call answered on the short path from the rendered views."
    );
    describe_counter!(VIEW_CACHE_HITS, "Cards and calls answered from memory.");
    describe_counter!(VIEW_CACHE_MISSES, "Cards and calls that had to be rendered from SQLite.");
    describe_gauge!(VIEW_CACHE_BYTES, "Bytes held by rendered cards and calls.");
    describe_gauge!(VIEW_CACHE_VIEWS, "Rendered cards and calls held.");
    describe_histogram!(WRITE_BATCH_SIZE, "Write jobs committed together in one transaction by the writer.");
    describe_counter!(
        ENDPOINT_CHECKS,
        "Liveness checks of listed endpoints, by kind and outcome (live, down, invalid)."
    );
    describe_histogram!(ENDPOINT_CHECK_SECONDS, "Time one endpoint check took, by kind.");
    describe_gauge!(
        ENDPOINT_LAST_CHECK,
        "When the last endpoint check of each kind finished (unix seconds)."
    );
    describe_gauge!(ENDPOINTS_SCHEDULED, "Endpoints on the check schedule of this primary.");
    describe_histogram!(
        WRITE_BATCH_SECONDS,
        "Time the writer spent on one batch: the transaction, its commit and the followers."
    );
}

/// Counts one refusal by a rate limit.
pub fn rate_limited(limit: &'static str) {
    metrics::counter!(RATE_LIMITED, "limit" => limit).increment(1);
}

/// Counts one profile the model embedded for a registration or a profile write.
pub fn profile_embedded() {
    metrics::counter!(PROFILE_EMBEDDINGS).increment(1);
}

/// Counts one endpoint check and when it finished.
pub fn endpoint_checked(kind: &'static str, outcome: &'static str, took: std::time::Duration) {
    metrics::counter!(ENDPOINT_CHECKS, "kind" => kind, "outcome" => outcome).increment(1);
    metrics::histogram!(ENDPOINT_CHECK_SECONDS, "kind" => kind).record(took.as_secs_f64());
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    metrics::gauge!(ENDPOINT_LAST_CHECK, "kind" => kind).set(now.as_secs_f64());
}

/// How many endpoints the schedule holds.
pub fn endpoints_scheduled(n: usize) {
    metrics::gauge!(ENDPOINTS_SCHEDULED).set(n as f64);
}

/// Where a replica stands against the primary (write positions, and how long it has been behind).
pub fn replica_stands(seq_behind: u64, seconds_behind: f64, applied: u64, primary: u64) {
    metrics::gauge!(REPLICA_SEQ_BEHIND).set(seq_behind as f64);
    metrics::gauge!(REPLICA_SECONDS_BEHIND).set(seconds_behind);
    metrics::gauge!(REPLICA_APPLIED).set(applied as f64);
    metrics::gauge!(REPLICA_PRIMARY_SEQ).set(primary as f64);
}
