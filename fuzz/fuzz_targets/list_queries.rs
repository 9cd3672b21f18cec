//! The query string of every list endpoint, as the `QueryParams` extractor reads it:
//! `url::form_urlencoded::parse`, then `validation::from_query::<T>`. The first byte picks the
//! query type, the rest is the query string.

#![no_main]

use agentdir::domain::agent::AgentSearch;
use agentdir::domain::call::CallSearch;
use agentdir::domain::changes::{self, ChangesQuery};
use agentdir::domain::collab::CollabFilter;
use agentdir::domain::contact_request::RequestFilter;
use agentdir::domain::list::{self, Paging};
use agentdir::error::Error;
use agentdir::validation;
use libfuzzer_sys::fuzz_target;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, query)) = data.split_first() else {
        return;
    };
    let page = |limit: Option<u32>, offset: Option<u32>, max: u32| {
        assert!(limit.is_none_or(|l| (1..=max).contains(&l)), "limit {limit:?}");
        assert!(offset.is_none_or(|o| o <= list::MAX_OFFSET), "offset {offset:?}");
    };
    match selector % 6 {
        0 => {
            if let Some(q) = check::<AgentSearch>(query) {
                page(q.limit, q.offset, list::AGENTS_MAX_LIMIT);
                assert!(q.min_level.is_none_or(|l| l <= 2));
            }
        }
        1 => {
            if let Some(q) = check::<CallSearch>(query) {
                page(q.limit, q.offset, list::CALLS_MAX_LIMIT);
            }
        }
        2 => {
            if let Some(q) = check::<CollabFilter>(query) {
                page(q.paging.limit, q.paging.offset, list::OTHER_MAX_LIMIT);
            }
        }
        3 => {
            if let Some(q) = check::<RequestFilter>(query) {
                page(q.paging.limit, q.paging.offset, list::OTHER_MAX_LIMIT);
            }
        }
        4 => {
            if let Some(q) = check::<Paging>(query) {
                page(q.limit, q.offset, list::OTHER_MAX_LIMIT);
            }
        }
        _ => {
            if let Some(q) = check::<ChangesQuery>(query) {
                page(q.limit, None, changes::MAX_LIMIT);
                if let Some(after) = &q.after {
                    let chars = after.chars().count();
                    assert!((1..=changes::CURSOR_MAX as usize).contains(&chars), "{after:?}");
                    // What the service does with it next: whatever the schema admits has the
                    // shape of a cursor (of this feed or another).
                    let read = changes::Cursor::parse(after, 0);
                    assert_ne!(read, Err(changes::CursorFault::Shape), "{after:?}");
                }
            }
        }
    }
});

/// Runs one query string through the extractor's steps; every refusal is a 400 with messages in
/// both languages that names the parameter.
fn check<T: DeserializeOwned + JsonSchema + 'static>(query: &[u8]) -> Option<T> {
    let pairs = url::form_urlencoded::parse(query).into_owned().collect();
    match validation::from_query::<T>(pairs) {
        Ok(q) => Some(q),
        Err(e) => {
            refusal(&e);
            None
        }
    }
}

fn refusal(e: &Error) {
    assert_eq!(e.status(), 400, "{e:?}");
    let m = e.messages();
    assert!(!m.en.is_empty() && !m.zh.is_empty(), "{e:?}");
    assert!(e.field().is_some_and(|f| !f.is_empty()), "{e:?}");
}
