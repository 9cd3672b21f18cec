//! The three counters of the directory, as SQLite holds them, each with its own name and type,
//! so none can be passed where another is meant.
//!
//! - [`ChangeSeq`]: the `seq` of a row of the change log (table `changes`), appended by the
//!   triggers of every write that changes an agent, a call or a collaboration. What follows the
//!   log keeps the last one it applied: the search index (`SearchIndex::applied_seq`), the
//!   in-memory vectors, the view cache; the change feed's cursor is one too.
//! - [`WritePosition`]: the write position of the `meta` table (`replica`), advanced
//!   once by every write through a server, whatever it changed. The primary answers each write
//!   with it in `X-Agentdir-Seq`; a replica knows the position its copy holds and waits for a
//!   client's. It cannot be the change-log seq: many writes (a rate event, a contact request,
//!   a recovery) append no change-log row, and a client that made one still waits for it.
//! - [`DataVersion`]: SQLite's `PRAGMA data_version` of one connection, which moves when any
//!   other connection commits. Read from shared memory without a page read, it tells the
//!   followers whether there can be anything new at all (`derived::follow`); it is local to the
//!   connection and to the process, so it is never stored nor sent.

use serde::{Deserialize, Serialize};

/// The `seq` of a change-log row (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ChangeSeq(u64);

/// The write position of the `meta` table (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WritePosition(u64);

/// SQLite's `PRAGMA data_version` as one connection sees it (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataVersion(i64);

macro_rules! counter {
    ($name:ident, $int:ty) => {
        impl $name {
            pub const fn new(value: $int) -> Self {
                Self(value)
            }

            pub const fn get(self) -> $int {
                self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

counter!(ChangeSeq, u64);
counter!(WritePosition, u64);
counter!(DataVersion, i64);

impl DataVersion {
    /// Before the first look: differs from every version SQLite reports.
    pub const UNSEEN: DataVersion = DataVersion(i64::MIN);
}
