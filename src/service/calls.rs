//! Calls and replies: posting, reading with replies, deleting, replying, reporting, and the
//! replies left on one's own calls (searching them is `finding::calls`).

use super::events::tell;
use super::{App, Caller};
use crate::app::limits::{InMemory, Persistent};
use crate::derived::views;
use crate::domain::call::{
    CallReplyList, CallSummary, Deleted, Lang, NewCall, NewReply, ReplyList, ReplyView, ReportInput,
    ReportTarget, Reported,
};
use crate::domain::events::{EventDetail, EventKind, SubjectKind};
use crate::domain::list::{Page, Paging};
use crate::domain::notice::NOTICE;
use crate::error::{Error, Result};
use crate::ids;
use crate::store::calls::{self as calls_store, NewCallRow};
use crate::store::{agents, replies, reports};
use crate::time::{day_passed, now_ms};

impl App {
    pub async fn post_call(&self, caller: Caller, input: NewCall) -> Result<CallSummary> {
        let now = now_ms();
        if input.deadline.as_deref().is_some_and(|d| day_passed(d, now)) {
            return Err(Error::DeadlinePassed);
        }
        let id = ids::new_id(ids::CALL);
        let lang = input.lang.unwrap_or_else(|| Lang::detect(&format!("{} {}", input.title, input.body)));
        let languages = input.languages.unwrap_or_default();
        let tags = input.tags.unwrap_or_default();
        let app = self.clone();
        self.write(move |tx| {
            app.limits.check_agent(tx, Persistent::Calls, caller.id, now)?;
            let key = calls_store::insert(
                tx,
                &NewCallRow {
                    id: &id,
                    agent_id: caller.id,
                    kind: input.kind,
                    title: &input.title,
                    body: &input.body,
                    deliverable: input.deliverable.as_deref(),
                    deadline: input.deadline.as_deref(),
                    constraints: input.constraints.as_deref(),
                    languages: &languages,
                    tags: &tags,
                    lang,
                    created_at: now,
                },
            )?;
            app.limits.record_agent(tx, Persistent::Calls, caller.id, now)?;
            agents::touch(tx, caller.id, now, false)?;
            let row = calls_store::by_key(tx, key)?.ok_or(Error::Internal)?;
            Ok(row.summary)
        })
        .await
    }

    /// Deletes a call of the caller's; anyone else gets 404.
    pub async fn delete_call(&self, caller: Caller, id: String) -> Result<Deleted> {
        if !ids::has_prefix(&id, ids::CALL) {
            return Err(Error::NotFound);
        }
        let deleted = id.clone();
        self.write(move |tx| {
            let c =
                calls_store::by_id(tx, &id)?.filter(|c| c.agent_id == caller.id).ok_or(Error::NotFound)?;
            calls_store::delete(tx, c.key)?;
            agents::touch(tx, caller.id, now_ms(), false)
        })
        .await?;
        Ok(Deleted { id: deleted, deleted: true })
    }

    pub async fn reply(&self, caller: Caller, call_id: String, input: NewReply) -> Result<ReplyView> {
        let now = now_ms();
        let id = ids::new_id(ids::REPLY);
        let app = self.clone();
        self.write(move |tx| {
            let c = views::visible_call(tx, &call_id)?;
            app.limits.spend_agent(tx, Persistent::Replies, caller.id, now)?;
            replies::insert(tx, &id, c.key, caller.id, &input.body, now)?;
            agents::touch(tx, caller.id, now, false)?;
            if c.agent_id != caller.id {
                let detail = EventDetail { post_id: Some(call_id.clone()), ..EventDetail::default() };
                tell(tx, c.agent_id, EventKind::ReplyReceived, SubjectKind::Reply, &id, detail, now)?;
            }
            Ok(views::reply(replies::by_id(tx, &id)?.ok_or(Error::Internal)?))
        })
        .await
    }

    /// Anyone may report a visible call; the report waits for the operators.
    pub async fn report_call(
        &self,
        call_id: String,
        input: ReportInput,
        client_ip: String,
    ) -> Result<Reported> {
        let id = ids::new_id(ids::REPORT);
        let report_id = id.clone();
        let app = self.clone();
        self.write(move |tx| {
            views::visible_call(tx, &call_id)?;
            app.limits.take(InMemory::Reports, &client_ip)?;
            reports::insert(
                tx,
                &reports::NewReport {
                    id: &id,
                    target_kind: ReportTarget::Call,
                    target_id: &call_id,
                    reporter_agent_id: None,
                    reporter_ip: Some(&client_ip),
                    reason: input.reason.as_deref(),
                    created_at: now_ms(),
                },
            )
        })
        .await?;
        Ok(Reported { id: report_id, reported: true })
    }

    /// `GET /api/posts/{id}/replies`: a public call's replies, oldest first, a page at a time.
    pub async fn call_replies(&self, id: String, paging: Paging) -> Result<CallReplyList> {
        self.blocking(move |app| {
            let page = Page::from(paging);
            let conn = app.read()?;
            // One snapshot: the call is public, and its replies are those of that moment.
            let snapshot = conn.unchecked_transaction()?;
            let call = views::visible_call(&snapshot, &id)?;
            let (total, rows) = replies::for_call(&snapshot, call.key, page.limit, page.offset)?;
            Ok(CallReplyList {
                notice: NOTICE,
                replies: rows.into_iter().map(views::reply).collect(),
                total,
                limit: page.limit,
                offset: page.offset,
            })
        })
        .await
    }

    pub async fn replies_on_own_calls(&self, caller: Caller, paging: Paging) -> Result<ReplyList> {
        self.blocking(move |app| {
            let page = Page::from(paging);
            let (total, rows) = replies::on_calls_of(&*app.read()?, caller.id, page.limit, page.offset)?;
            Ok(ReplyList {
                notice: NOTICE,
                replies: rows.into_iter().map(views::reply_on_own_call).collect(),
                total,
                limit: page.limit,
                offset: page.offset,
            })
        })
        .await
    }
}
