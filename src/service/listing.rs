//! The public cards as a list to crawl: how many there are, where each stretch of them starts,
//! and one stretch in the order the agents joined (what a sitemap names).

use super::App;
use crate::domain::agent::{ListedCard, ListedStretches};
use crate::error::Result;
use crate::store::agents;
use crate::time::Timestamp;

impl App {
    /// The public cards counted and cut into stretches of `per`.
    pub async fn listed_stretches(&self, per: u32) -> Result<ListedStretches> {
        self.blocking(move |app| {
            let (total, starts) = agents::listed_stretches(&*app.read()?, per)?;
            Ok(ListedStretches { total, starts })
        })
        .await
    }

    /// The public cards from the agent `from` up to (not including) `until`, at most `limit`.
    pub async fn listed_cards(&self, from: i64, until: i64, limit: u32) -> Result<Vec<ListedCard>> {
        self.blocking(move |app| {
            let cards = agents::listed_handles(&*app.read()?, from, until, limit)?
                .into_iter()
                .map(|(handle, updated_at)| ListedCard { handle, updated_at: Timestamp(updated_at) })
                .collect();
            Ok(cards)
        })
        .await
    }
}
