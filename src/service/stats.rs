//! App-wide counts.

use super::App;
use crate::domain::notice::NOTICE;
use crate::domain::stats::Stats;
use crate::error::Result;
use crate::store::{collabs, stats};

impl App {
    pub async fn stats(&self) -> Result<Stats> {
        self.blocking(move |app| {
            let conn = app.read()?;
            let c = stats::counts(&conn)?;
            Ok(Stats {
                notice: NOTICE,
                agents: c.agents,
                agents_verified: c.agents_verified,
                agents_owner_claimed: c.agents_owner_claimed,
                posts: c.calls,
                replies: c.replies,
                confirmed_collaborations: collabs::counted_total(&conn)?,
            })
        })
        .await
    }
}
