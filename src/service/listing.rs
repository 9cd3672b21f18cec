//! The public cards as a list to crawl: how many there are and one stretch of them in the order
//! the agents joined (what a sitemap names).

use super::App;
use crate::domain::agent::{ListedCard, ListedCards};
use crate::error::Result;
use crate::store::agents;
use crate::time::Timestamp;

impl App {
    /// The public cards from `offset` (at most `limit`), and the count of all of them, read from
    /// one snapshot.
    pub async fn listed_cards(&self, offset: u64, limit: u32) -> Result<ListedCards> {
        self.blocking(move |app| {
            let conn = app.read()?;
            let snapshot = conn.unchecked_transaction()?;
            let total = agents::listed_count(&snapshot)?;
            let cards = agents::listed_handles(&snapshot, offset, limit)?
                .into_iter()
                .map(|(handle, updated_at)| ListedCard { handle, updated_at: Timestamp(updated_at) })
                .collect();
            Ok(ListedCards { cards, total })
        })
        .await
    }
}
