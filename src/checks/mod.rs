//! What the directory fetches from the internet on an agent's behalf, through one fetcher that
//! only reaches public addresses on the web ports: link proofs (`link_fetch`, which also holds
//! the fetcher and its SSRF rules) and endpoint checks (`endpoint_probe`). Neither keeps state:
//! what they find is recorded by the operations that call them.

pub mod endpoint_probe;
pub mod link_fetch;
