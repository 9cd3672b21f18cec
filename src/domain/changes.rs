//! The public change feed (`GET /api/changes`): what a mirror, a crawler or a read node reads
//! to follow the public directory without re-reading it. Compacted: each entity appears once,
//! at its latest change, so reading from the beginning gives the whole public directory and
//! polling with `next` gives what changed since.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::agent::AgentView;
use super::call::CallSummary;
use super::collab::CollabView;
use super::notice::Notice;
use crate::time::Timestamp;

pub const DEFAULT_LIMIT: u32 = 100;
pub const MAX_LIMIT: u32 = 1_000;
/// Longest cursor the server issues (its epoch, an underscore, a seq, and at most an underscore
/// and a horizon).
pub const CURSOR_MAX: u32 = (CURSOR_EPOCH_DIGITS + 2 * CURSOR_SEQ_DIGITS + 2) as u32;
/// Base-36 digits of a cursor's seq: twelve always fit a seq (36^12 > 4.7 * 10^18).
pub const CURSOR_SEQ_DIGITS: usize = 12;
/// Base-36 digits of a cursor's epoch, at most: thirteen hold any `u64`.
pub const CURSOR_EPOCH_DIGITS: usize = 13;

/// Query of `GET /api/changes`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(transform = super::reject_null)]
pub struct ChangesQuery {
    /// A cursor from an earlier answer (`next`, or an entry's `cursor`); leave it out to read
    /// from the beginning. One of this feed past its newest (never issued) is 400; one of
    /// another feed (another directory's, or this one's before its database was made anew) is
    /// 410 `cursor_expired`: read from the beginning again.
    #[schemars(length(min = 1, max = CURSOR_MAX), pattern(Cursor::PATTERN))]
    pub after: Option<String>,
    #[schemars(
        range(min = 1, max = MAX_LIMIT),
        description = const_format::concatcp!("Entries per page, 1-", MAX_LIMIT, " (default ", DEFAULT_LIMIT, ").")
    )]
    pub limit: Option<u32>,
}

/// A position in the feed: the database's feed epoch (so a cursor of another database is never
/// taken for one of this), a change-log seq, and, while a reading from the beginning has not
/// reached it, the newest seq when that reading began (its horizon). The reader never saw what a
/// deletion forgotten at or below its horizon was about (the entity's only row was that
/// deletion, or a later one), so only a deletion forgotten past both its seq and its horizon can
/// have been missed by it. Without the horizon, every reader below the newest forgotten
/// deletion was refused, and one reading from the beginning over older public entries could
/// never reach the end; with the newest forgotten seq at issue instead, retention forgetting
/// the old deletions of every second still refused a long reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub epoch: u64,
    pub seq: u64,
    /// The newest seq when the reading from the beginning began; written only while above `seq`.
    pub horizon: u64,
}

/// Why a cursor is not one of this feed's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CursorFault {
    /// Not of the published shape [`Cursor::PATTERN`].
    Shape,
    /// Of the shape, but of a feed with another epoch.
    OtherFeed,
}

impl Cursor {
    /// Every feed's cursors: an epoch and a seq, each in lower-case base 36 (the epoch is a
    /// `u64`: thirteen digits hold it), then, while a reading from the beginning is below it,
    /// its horizon. Published without this feed's epoch, so that one document serves a client
    /// of any directory.
    pub const PATTERN: &str = const_format::concatcp!(
        "^[0-9a-z]{1,",
        CURSOR_EPOCH_DIGITS,
        "}_[0-9a-z]{1,",
        CURSOR_SEQ_DIGITS,
        "}(_[0-9a-z]{1,",
        CURSOR_SEQ_DIGITS,
        "})?$"
    );

    /// A cursor at `seq` of a reading whose horizon is `horizon` (0: none).
    pub fn issued(epoch: u64, seq: u64, horizon: u64) -> Cursor {
        Cursor { epoch, seq, horizon: if horizon > seq { horizon } else { 0 } }
    }

    /// `text` as a cursor of the feed whose epoch is `epoch` (the epoch as the server writes
    /// it; seqs of at most [`CURSOR_SEQ_DIGITS`] digits, so they fit the database's signed seq).
    pub fn parse(text: &str, epoch: u64) -> Result<Cursor, CursorFault> {
        let mut parts = text.split('_');
        let (Some(epoch_text), Some(seq), horizon, None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(CursorFault::Shape);
        };
        let digits = |s: &str, most: usize| {
            (1..=most).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
        };
        let number = |s: &str| {
            if digits(s, CURSOR_SEQ_DIGITS) {
                u64::from_str_radix(s, 36).map_err(|_| CursorFault::Shape)
            } else {
                Err(CursorFault::Shape)
            }
        };
        if !digits(epoch_text, CURSOR_EPOCH_DIGITS) {
            return Err(CursorFault::Shape);
        }
        let seq = number(seq)?;
        let horizon = horizon.map_or(Ok(0), number)?;
        if epoch_text != base36(epoch) {
            return Err(CursorFault::OtherFeed);
        }
        Ok(Cursor { epoch, seq, horizon })
    }

    /// Whether a reader at this cursor may have missed a deletion the log no longer holds (the
    /// log has forgotten the deletions up to `forgotten`): one past its seq and its horizon. A
    /// reader at the very beginning holds nothing such a deletion could be about.
    pub fn missed_a_forgotten_deletion(&self, forgotten: u64) -> bool {
        self.seq > 0 && forgotten > self.seq.max(self.horizon)
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}_{}", base36(self.epoch), base36(self.seq))?;
        if self.horizon > self.seq {
            write!(f, "_{}", base36(self.horizon))?;
        }
        Ok(())
    }
}

fn base36(mut n: u64) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// What a feed entry is about. The set may grow: it is published as a string with the known
/// values described (`schema::open_set`), so a client skips an entry it does not know instead
/// of failing on it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema, strum::IntoStaticStr, strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum EntityKind {
    Agent,
    Call,
    Collab,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangeOp {
    /// The entity is publicly readable; `data` is what a public read shows now.
    Upsert,
    /// The entity is no longer publicly readable (deleted, hidden, suspended, or a
    /// collaboration that left `GET /api/collabs`): drop it.
    Delete,
}

/// What a public read shows of an entity now.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ChangeData {
    /// The `agent` object of the card (`GET /api/agents/{handle}`).
    Agent(Box<AgentView>),
    /// The call as an item of `GET /api/posts`.
    Call(Box<CallSummary>),
    /// The collaboration as an item of `GET /api/collabs`.
    Collab(Box<CollabView>),
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ChangeEntry {
    /// Read on from here to get what changed after this entry.
    pub cursor: String,
    #[schemars(schema_with = "super::schema::open_set::<EntityKind>")]
    pub kind: EntityKind,
    /// The handle, the `post_` id or the `col_` id.
    pub id: String,
    pub op: ChangeOp,
    /// When the entity last changed.
    pub at: Timestamp,
    /// Present on an upsert only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<ChangeData>,
}

/// Body of `GET /api/changes`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ChangeFeed {
    pub notice: Notice,
    /// Oldest first.
    pub changes: Vec<ChangeEntry>,
    /// The cursor to ask with next time (the given one when nothing is new).
    pub next: String,
    /// Whether more entries follow at once: ask again with `next` without waiting.
    pub has_more: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_is_read_as_the_published_pattern_admits_it_and_of_its_own_feed_only() {
        let epoch = 0x5eed_u64 << 20;
        let pattern = regex::Regex::new(Cursor::PATTERN).expect("pattern");
        let widest = format!("{}_{}", base36(epoch), "z".repeat(CURSOR_SEQ_DIGITS));
        let seq_of = |text: &str, epoch: u64| Cursor::parse(text, epoch).map(|c| c.seq);
        let seq = seq_of(&widest, epoch).expect("the widest seq the pattern admits");
        assert!(pattern.is_match(&widest) && i64::try_from(seq).is_ok());
        let largest = Cursor::issued(u64::MAX, 1, u64::MAX >> 8).to_string();
        assert!(pattern.is_match(&largest) && largest.len() <= CURSOR_MAX as usize, "{largest}");
        assert_eq!(
            Cursor::parse(&largest, u64::MAX),
            Ok(Cursor { epoch: u64::MAX, seq: 1, horizon: u64::MAX >> 8 })
        );
        let c = Cursor::issued(epoch, 46, 0);
        assert_eq!(c.to_string(), format!("{}_1a", base36(epoch)));
        assert_eq!(Cursor::parse(&c.to_string(), epoch), Ok(c));
        assert_eq!(seq_of(&format!("{}_001a", base36(epoch)), epoch), Ok(46));
        // The horizon is written only while it is past the seq.
        assert_eq!(Cursor::issued(epoch, 46, 40).to_string(), c.to_string());
        let inside = Cursor::issued(epoch, 46, 50);
        assert_eq!(inside.to_string(), format!("{}_1a_1e", base36(epoch)));
        assert_eq!(Cursor::parse(&inside.to_string(), epoch), Ok(inside));
        // Refused only for deletions forgotten since it was issued.
        assert!(!inside.missed_a_forgotten_deletion(50));
        assert!(inside.missed_a_forgotten_deletion(51));
        assert!(!c.missed_a_forgotten_deletion(46));
        assert!(c.missed_a_forgotten_deletion(47));
        assert!(!Cursor::issued(epoch, 0, 0).missed_a_forgotten_deletion(1_000));
        // Of the shape, but another feed's: another epoch, or this one written otherwise.
        let padded_epoch = format!("0{}_1a", base36(epoch));
        let widest_epoch = format!("{}_1a", "z".repeat(CURSOR_EPOCH_DIGITS));
        for other in [Cursor::issued(epoch + 1, 46, 0).to_string(), padded_epoch, widest_epoch] {
            assert!(pattern.is_match(&other), "{other}");
            assert_eq!(seq_of(&other, epoch), Err(CursorFault::OtherFeed), "{other}");
        }
        let too_long = format!("{}_1{}", base36(epoch), "z".repeat(CURSOR_SEQ_DIGITS));
        let upper = format!("{}_1a", base36(epoch).to_uppercase());
        let long_epoch = format!("{}_1", "1".repeat(CURSOR_EPOCH_DIGITS + 1));
        let four = format!("{}_1a_1e_1f", base36(epoch));
        let empty_third = format!("{}_1a_", base36(epoch));
        for bad in [
            too_long,
            upper,
            long_epoch,
            "_1".into(),
            format!("{}_", base36(epoch)),
            "x".into(),
            four,
            empty_third,
        ] {
            assert!(!pattern.is_match(&bad), "{bad}");
            assert_eq!(seq_of(&bad, epoch), Err(CursorFault::Shape), "{bad}");
        }
    }
}
