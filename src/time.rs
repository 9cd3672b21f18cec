//! Time as the directory stores and shows it: unix milliseconds inside, RFC 3339 UTC with a `Z`
//! outside.

use std::borrow::Cow;

use chrono::{DateTime, SecondsFormat, Utc};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub const SECOND: i64 = 1_000;
pub const DAY: i64 = 86_400 * SECOND;

pub fn now_ms() -> i64 {
    Utc::now().timestamp_millis() + test_clock::offset_ms()
}

/// A clock tests can move forward, so rules of time (a link proof's 180 days, a deletion's grace
/// period, the change feed's retention) are tested without waiting. Only a build with the cargo
/// feature `test-clock` has it (`.ci/run` builds the tests so); a release build's clock is the
/// system's, and a release build with the feature does not compile.
///
/// The offset is the number in the file [`test_clock::OFFSET_FILE`] of the data dir: milliseconds
/// added to the system time. Every process on that data dir (`serve`, `admin`, `inbound-mail`)
/// reads it at every `now_ms()`, so a test moves a running server's clock by writing the file:
/// what the server keeps in memory (its caches, their expiry) stays as it was. SQLite's own
/// `'now'` (the change log's `at`) is not moved.
#[cfg(feature = "test-clock")]
pub mod test_clock {
    use std::path::PathBuf;
    use std::sync::OnceLock;

    #[cfg(not(debug_assertions))]
    compile_error!("the test clock is for test builds only: build a release without `test-clock`");

    pub const OFFSET_FILE: &str = "test-clock-offset-ms";

    static FILE: OnceLock<PathBuf> = OnceLock::new();

    /// Read at every call: a test build trades a file read for a clock it can move at any time.
    pub fn offset_ms() -> i64 {
        FILE.get()
            .and_then(|file| std::fs::read_to_string(file).ok())
            .and_then(|s| s.trim().parse::<i64>().ok())
            .unwrap_or(0)
    }

    /// Points the clock at the offset file of the data dir.
    pub fn load(data_dir: &std::path::Path) {
        let _ = FILE.set(data_dir.join(OFFSET_FILE));
        let offset = offset_ms();
        if offset != 0 {
            tracing::warn!(offset_ms = offset, "test clock: the clock runs ahead of the system's");
        }
    }
}

/// Without the `test-clock` feature the clock is the system's: nothing to read, nothing added.
#[cfg(not(feature = "test-clock"))]
pub mod test_clock {
    #[inline(always)]
    pub const fn offset_ms() -> i64 {
        0
    }

    pub fn load(_data_dir: &std::path::Path) {}
}

/// A point in time, serialised as RFC 3339 (`2026-11-21T05:48:00.123Z`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timestamp(pub i64);

impl Timestamp {
    pub fn rfc3339(self) -> String {
        DateTime::<Utc>::from_timestamp_millis(self.0)
            .unwrap_or_default()
            .to_rfc3339_opts(SecondsFormat::Millis, true)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.rfc3339())
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Timestamp, D::Error> {
        let text = String::deserialize(de)?;
        DateTime::parse_from_rfc3339(&text)
            .map(|t| Timestamp(t.timestamp_millis()))
            .map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Timestamp {
    fn schema_name() -> Cow<'static, str> {
        "Timestamp".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string", "format": "date-time" })
    }
}

/// Whole seconds from `now` until `until`, at least 1: the value of a `Retry-After` header.
pub fn seconds_until(until_ms: i64, now_ms: i64) -> u64 {
    let ms = (until_ms - now_ms).max(0) as u64;
    ms.div_ceil(1000).max(1)
}

/// Whether `day` (`YYYY-MM-DD`, as the schemas' `date` format admits it) is over by `now` for
/// every reader: before yesterday in UTC, so a client whose day starts earlier than UTC's may
/// still name its today.
pub fn day_passed(day: &str, now_ms: i64) -> bool {
    let yesterday = DateTime::<Utc>::from_timestamp_millis(now_ms - DAY).unwrap_or_default().date_naive();
    chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d").is_ok_and(|d| d < yesterday)
}
