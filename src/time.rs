//! Time as the directory stores and shows it: unix milliseconds inside, RFC 3339 UTC with a `Z`
//! outside.

use std::borrow::Cow;

use chrono::{DateTime, SecondsFormat, Utc};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Serialize, Serializer};

pub const SECOND: i64 = 1_000;
pub const DAY: i64 = 86_400 * SECOND;

pub fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
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
