//! Every JSON request body, as the `JsonBody`/`OptionalJsonBody` extractors read it:
//! `serde_json::from_slice`, then `validation::from_json::<T>` (schema check, then
//! deserialisation); and the arguments of every MCP tool, as `mcp_port` reads them with
//! `validation::from_loose_json::<T>`. The first byte picks the input type, the rest is the body.

#![no_main]

use agentdir::domain::agent::{AgentSearch, ProfilePatch, Registration};
use agentdir::domain::call::{CallSearch, NewCall, NewReply, ReportInput};
use agentdir::domain::collab::{CollabFilter, NewCollab};
use agentdir::domain::contact_request::{DeclineInput, NewContactRequest};
use agentdir::domain::offering::{MAX_OFFERINGS, OfferingsReplacement};
use agentdir::domain::recovery::RecoveryExchange;
use agentdir::domain::trust::{LinkProofInput, OwnerClaimInput};
use agentdir::error::Error;
use agentdir::mcp_port::{AgentHandle, CallId};
use agentdir::validation;
use libfuzzer_sys::fuzz_target;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    // Larger bodies are refused before they are read.
    if body.len() > agentdir::domain::schema::MAX_BODY_BYTES {
        return;
    }
    match selector % 17 {
        0 => drop(check::<Registration>(body)),
        1 => drop(check::<ProfilePatch>(body)),
        2 => {
            if let Some(o) = check::<OfferingsReplacement>(body) {
                assert!(o.offerings.len() <= MAX_OFFERINGS);
            }
        }
        3 => drop(check::<NewContactRequest>(body)),
        4 => drop(check::<DeclineInput>(body)),
        5 => drop(check::<NewCall>(body)),
        6 => drop(check::<NewReply>(body)),
        7 => drop(check::<ReportInput>(body)),
        8 => drop(check::<NewCollab>(body)),
        9 => drop(check::<OwnerClaimInput>(body)),
        10 => drop(check::<LinkProofInput>(body)),
        11 => drop(check::<RecoveryExchange>(body)),
        // The read tools' arguments.
        12 => drop(check_tool::<AgentSearch>(body)),
        13 => drop(check_tool::<AgentHandle>(body)),
        14 => drop(check_tool::<CallSearch>(body)),
        15 => drop(check_tool::<CallId>(body)),
        _ => drop(check_tool::<CollabFilter>(body)),
    }
});

/// Runs one body through the extractor's steps. A body the schema accepts must deserialise,
/// one it refuses must not, and every refusal is a client error with messages in both
/// languages.
fn check<T: DeserializeOwned + JsonSchema + 'static>(body: &[u8]) -> Option<T> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let accepted = value.is_object() && validation::accepts::<T>(&value);
    match validation::from_json::<T>(value) {
        Ok(input) => {
            assert!(accepted, "deserialised a body its schema refuses");
            Some(input)
        }
        Err(e) => {
            assert!(!accepted, "a body the schema accepts did not deserialise: {e:?}");
            refusal(&e);
            None
        }
    }
}

/// Runs one tool's arguments through `mcp_port`'s steps: an object whose numbers and booleans may
/// come as strings; a refusal has the same shape as a body's.
fn check_tool<T: DeserializeOwned + JsonSchema + 'static>(body: &[u8]) -> Option<T> {
    let serde_json::Value::Object(args) = serde_json::from_slice(body).ok()? else {
        return None;
    };
    match validation::from_loose_json::<T>(args) {
        Ok(input) => Some(input),
        Err(e) => {
            refusal(&e);
            None
        }
    }
}

fn refusal(e: &Error) {
    assert!(matches!(e.status(), 400 | 422), "{e:?}");
    let m = e.messages();
    assert!(!m.en.is_empty() && !m.zh.is_empty(), "{e:?}");
    if let Some(field) = e.field() {
        assert!(!field.is_empty(), "{e:?}");
    }
}
