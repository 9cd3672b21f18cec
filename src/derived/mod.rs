//! What follows SQLite's change log and is rebuilt from it: the follower that keeps the search
//! index, the meaning state and the caches in line with the log (`follow`), the positions each
//! of them keeps (`positions`), and the cache of what the core renders (`cache`): rendered
//! documents (`documents`) and list items (`items`).

pub mod cache;
pub mod documents;
pub mod follow;
pub mod items;
pub mod rendered;
