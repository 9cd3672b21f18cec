//! What follows SQLite's change log and is rebuilt from it: the follower that keeps the search
//! index, the vectors (`vectors`) and the caches in line with the log (`follow`), and the cache
//! of what the core renders (`cache`): rendered documents (`documents`) and list items
//! (`items`).

pub mod cache;
pub mod call_vectors;
pub mod documents;
pub mod follow;
pub mod items;
pub mod rendered;
pub mod vector_rows;
pub mod vectors;
pub mod views;
