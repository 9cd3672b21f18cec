//! What follows SQLite's change log and is rebuilt from it: the positions each follower keeps.

pub mod positions;
