//! Endpoints on the profile: the rules a list must meet when it is set, and keeping what
//! earlier checks found for endpoints that stay (the view the card shows is `derived::views`).

use rusqlite::Connection;

use crate::checks::link_fetch;
use crate::domain::endpoint::{ALLOWED_PORTS, EndpointInput, EndpointStatus, Finding, port_rule_lifted};
use crate::domain::trust::carries_proof_text;
use crate::error::{Error, Result, Rule};
use crate::store::endpoints::{self as store, EndpointRow, Target};

/// Checks a list as it is set, beyond what its schema says (the schema holds the port rule as
/// a pattern; this is the same rule as the fetcher reads URLs): a URL the fetcher would take, on
/// an allowed port unless the rule is lifted for local testing. Addresses are judged when
/// checked (a refused one reads `down`, `unreachable`), as link proofs judge them.
pub fn validate(list: &[EndpointInput]) -> Result<()> {
    for (i, e) in list.iter().enumerate() {
        let field = || format!("endpoints.{i}.url");
        let url = link_fetch::check_url(&e.url).map_err(|_| Error::validation(field(), Rule::HttpUrl))?;
        let port = url.port_or_known_default().unwrap_or_default();
        if !port_rule_lifted() && !ALLOWED_PORTS.contains(&port) {
            return Err(Error::validation(field(), Rule::EndpointPort));
        }
        // A server that writes the URL it was asked for into its answer would prove itself for
        // whoever lists it with the text in the URL, as a page that echoes its address would.
        // Judged as sent and as kept (its one spelling drops a host's trailing dots).
        let kept = link_fetch::canonical(&url);
        if carries_proof_text(&e.url) || carries_proof_text(&kept) {
            return Err(Error::validation(field(), Rule::ProofInUrl));
        }
    }
    Ok(())
}

/// Replaces the agent's endpoints with `list`, each URL in its one spelling; one that was listed
/// before (same kind and URL) keeps its status until a check answers. Returns what must be
/// checked now: all of them.
///
/// An endpoint is its kind and URL, listed once. The schema's `uniqueItems` refuses items sent
/// twice, but compares them as sent: two that differ only by a field the input ignores are
/// valid by the published schema, and are one endpoint here (the first).
pub fn replace(conn: &Connection, agent_id: i64, list: Vec<EndpointInput>, now: i64) -> Result<Vec<Target>> {
    let mut once: Vec<EndpointInput> = Vec::with_capacity(list.len());
    for mut e in list {
        // Kept in one spelling (`link_fetch::canonical`): two spellings of one URL are one
        // endpoint, here and for the rule that one endpoint URL counts for one agent.
        if let Ok(url) = link_fetch::check_url(&e.url) {
            e.url = link_fetch::canonical(&url);
        }
        if !once.contains(&e) {
            once.push(e);
        }
    }
    let before = store::for_agent(conn, agent_id)?;
    let rows: Vec<EndpointRow> = once
        .into_iter()
        .map(|e| {
            // Stored before URLs were kept in one spelling, a listed URL is matched in it too.
            let same = |b: &&EndpointRow| {
                b.kind == e.kind
                    && (b.url == e.url
                        || link_fetch::check_url(&b.url).is_ok_and(|u| link_fetch::canonical(&u) == e.url))
            };
            before.iter().find(same).cloned().map(|b| EndpointRow { url: e.url.clone(), ..b }).unwrap_or(
                EndpointRow {
                    kind: e.kind,
                    url: e.url,
                    status_since: now,
                    finding: Finding { status: Some(EndpointStatus::Unchecked), ..Finding::default() },
                },
            )
        })
        .collect();
    store::replace(conn, agent_id, &rows)?;
    Ok(rows.into_iter().map(|r| Target { agent_id, kind: r.kind, url: r.url }).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::endpoint::EndpointKind;

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

    #[test]
    fn a_url_is_judged_as_sent_and_as_kept() {
        let input = |url: &str| EndpointInput { kind: EndpointKind::Mcp, url: url.into() };
        let rule = |url: &str| match validate(&[input(url)]) {
            Err(Error::Validation { rule, .. }) => Some(rule),
            _ => None,
        };
        assert_eq!(rule("https://a.example/mcp?agentdir-proof:bob"), Some(Rule::ProofInUrl));
        // Kept without the trailing dot, the host would carry the text.
        assert_eq!(rule("http://agentdir-proof.:8080/"), Some(Rule::ProofInUrl));
        // A request the published schema admits is not refused for the length of its kept
        // spelling (each quote of a query is kept as `%27`; a bare host gains its `/`).
        let quoted = format!("https://a.example/?q={}", "'".repeat(1_000));
        assert_eq!(rule(&quoted), None);
        assert_eq!(rule("https://a.example/mcp"), None);
    }
}
