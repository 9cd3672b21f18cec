//! `GET /api/me/export`: everything held about the caller's agent, read in one snapshot.

use super::requests::request_views;
use super::{App, Caller};
use crate::derived::views;
use crate::derived::views::own_profile;
use crate::domain::export::{EXPORT_PAGE_ITEMS, Export, ExportQuery, ExportTotals, FiledReportView};
use crate::domain::handles::HeldHandle;
use crate::error::Result;
use crate::store::{agents, calls, collabs, holds, replies, reports, requests};
use crate::time::{Timestamp, now_ms};

impl App {
    pub async fn export(&self, caller: Caller, q: ExportQuery) -> Result<Export> {
        self.blocking(move |app| {
            let (page, offset) = q.page_and_offset();
            let limit = EXPORT_PAGE_ITEMS;
            let now = now_ms();
            let conn = app.read()?;
            // One snapshot, so the lists and the totals agree with each other.
            let snapshot = conn.unchecked_transaction()?;
            let a = caller.row(&snapshot)?;
            let (call_total, call_rows) = calls::of_agent(&snapshot, a.id, limit, offset)?;
            let (reply_total, reply_rows) = replies::by_agent(&snapshot, a.id, limit, offset)?;
            let (request_total, request_rows) =
                requests::list_for(&snapshot, a.id, None, None, now, limit, offset)?;
            let (collab_total, collab_rows) = collabs::of_agent(&snapshot, a.id, limit, offset)?;
            let (report_total, report_rows) = reports::filed_by(&snapshot, a.id, limit, offset)?;
            let end = u64::from(offset) + u64::from(limit);
            Ok(Export {
                exported_at: Timestamp(now),
                page,
                per_page: limit,
                has_more: [call_total, reply_total, request_total, collab_total, report_total]
                    .into_iter()
                    .any(|t| t > end),
                totals: ExportTotals {
                    calls: call_total,
                    replies: reply_total,
                    requests: request_total,
                    collaborations: collab_total,
                    reports: report_total,
                },
                profile: own_profile(&snapshot, &a, now)?,
                previous_mailbox: agents::recovering_previous_mailbox(&snapshot, a.id, now)?.map(Into::into),
                held_handles: holds::of_agent(&snapshot, a.id, now)?
                    .into_iter()
                    .map(|h| HeldHandle {
                        handle: h.handle,
                        reason: h.reason,
                        held_at: Timestamp(h.held_at),
                        until: h.until.map(Timestamp),
                    })
                    .collect(),
                calls: call_rows.into_iter().map(|c| c.summary).collect(),
                replies: reply_rows.into_iter().map(views::reply).collect(),
                requests: request_views(&snapshot, request_rows, now)?,
                collaborations: collab_rows.into_iter().map(|c| views::collab(c, true)).collect(),
                reports: report_rows
                    .into_iter()
                    .map(|r| FiledReportView {
                        id: r.id,
                        target_kind: r.target_kind,
                        target_id: r.target_id,
                        reason: r.reason,
                        filed_at: Timestamp(r.created_at),
                        resolved_at: r.resolved_at.map(Timestamp),
                    })
                    .collect(),
            })
        })
        .await
    }
}
