//! Endpoints on the profile: the rules a list must meet when it is set, keeping what earlier
//! checks found for endpoints that stay, and the view the card shows.

use rusqlite::Connection;

use crate::checks::link_fetch;
use crate::domain::endpoint::{
    ALLOWED_PORTS, EndpointAuth, EndpointInput, EndpointKind, EndpointStatus, EndpointView, Finding,
    is_owned, port_rule_lifted,
};
use crate::domain::trust::{LinkProofView, ProofStatus};
use crate::error::{Error, Result, Rule};
use crate::store::endpoints::{self as store, EndpointRow, Target};
use crate::time::Timestamp;

/// Checks a list as it is set, beyond what its schema says (the schema holds the port rule as
/// a pattern; this is the same rule as the fetcher reads URLs): a URL the fetcher would take, on
/// an allowed port unless the rule is lifted for local testing. Addresses are judged when
/// checked (a refused one makes the endpoint `invalid`), as link proofs judge them.
pub fn validate(list: &[EndpointInput]) -> Result<()> {
    for (i, e) in list.iter().enumerate() {
        let field = || format!("endpoints.{i}.url");
        let url = link_fetch::check_url(&e.url).map_err(|_| Error::validation(field(), Rule::HttpUrl))?;
        let port = url.port_or_known_default().unwrap_or_default();
        if !port_rule_lifted() && !ALLOWED_PORTS.contains(&port) {
            return Err(Error::validation(field(), Rule::EndpointPort));
        }
    }
    Ok(())
}

/// Replaces the agent's endpoints with `list`; one that was listed before (same kind and URL)
/// keeps its status until a check answers. Returns what must be checked now: all of them.
pub fn replace(conn: &Connection, agent_id: i64, list: Vec<EndpointInput>, now: i64) -> Result<Vec<Target>> {
    let before = store::for_agent(conn, agent_id)?;
    let rows: Vec<EndpointRow> = list
        .into_iter()
        .map(|e| {
            before.iter().find(|b| b.kind == e.kind && b.url == e.url).cloned().unwrap_or(EndpointRow {
                kind: e.kind,
                url: e.url,
                status_since: now,
                finding: Finding { status: Some(EndpointStatus::Unchecked), ..Finding::default() },
            })
        })
        .collect();
    store::replace(conn, agent_id, &rows)?;
    Ok(rows.into_iter().map(|r| Target { agent_id, kind: r.kind, url: r.url }).collect())
}

/// The endpoints as the card shows them; `links` are the agent's link proofs as shown.
pub fn views(rows: Vec<EndpointRow>, links: &[LinkProofView]) -> Vec<EndpointView> {
    rows.into_iter()
        .map(|r| {
            let live_proofs =
                links.iter().filter(|l| l.status == ProofStatus::Verified).map(|l| l.url.as_str());
            let owned = is_owned(&r.url, live_proofs);
            let f = r.finding;
            let count = |kind| if r.kind == kind { f.count } else { None };
            EndpointView {
                owned,
                status: f.status(),
                status_since: Timestamp(r.status_since),
                name: f.name,
                protocol_version: f.protocol_version,
                skill_count: count(EndpointKind::A2a),
                tool_count: count(EndpointKind::Mcp),
                auth: f.auth_required.then_some(EndpointAuth::Required),
                kind: r.kind,
                url: r.url,
            }
        })
        .collect()
}

/// Whether an agent with these endpoints counts for `live=true`: one of them live and owned.
pub fn any_live_and_owned(endpoints: &[EndpointView]) -> bool {
    endpoints.iter().any(|e| e.status == EndpointStatus::Live && e.owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_checked_when_set() {
        let input = |url: &str| EndpointInput { kind: EndpointKind::Http, url: url.into() };
        assert!(validate(&[input("https://a.example/"), input("http://b.example:8080/mcp")]).is_ok());
        match validate(&[input("https://a.example/"), input("https://c.example:22/")]) {
            Err(Error::Validation { field, rule }) => {
                assert_eq!((field.as_str(), rule), ("endpoints.1.url", Rule::EndpointPort))
            }
            other => panic!("{other:?}"),
        }
    }
}
