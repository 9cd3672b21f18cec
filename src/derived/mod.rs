//! What follows SQLite's change log and is rebuilt from it: the follower that keeps the search
//! index, the meaning state and the view cache in line with the log, and the positions each
//! of them keeps.

pub mod follow;
pub mod positions;
