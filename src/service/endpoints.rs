//! Endpoints on the profile: the rules a list must meet when it is set, keeping what earlier
//! checks found for endpoints that stay, and the view the card shows.

use std::collections::HashSet;
use std::net::IpAddr;

use rusqlite::Connection;
use url::Host;

use crate::domain::endpoint::{
    ALLOWED_PORTS, EndpointAuth, EndpointInput, EndpointKind, EndpointStatus, EndpointView, Finding, is_owned,
};
use crate::domain::trust::{LinkProofView, ProofStatus};
use crate::error::{Error, Result, Rule};
use crate::link_fetch::{self, PrivateTargets};
use crate::store::endpoints::{self as store, EndpointRow, Target};
use crate::time::Timestamp;

/// Checks a list as it is set, beyond what its schema says: a URL the fetcher would take, on
/// an allowed port, not naming a non-public address, and no endpoint twice. The port and
/// address rules are lifted when the operator lets checks reach non-public addresses (local
/// testing). Host names are resolved only when checked: their answer may change anyway.
pub fn validate(list: &[EndpointInput], private: &PrivateTargets) -> Result<()> {
    let mut seen = HashSet::new();
    for (i, e) in list.iter().enumerate() {
        let field = || format!("endpoints.{i}.url");
        let url = link_fetch::check_url(&e.url).map_err(|_| Error::validation(field(), Rule::HttpUrl))?;
        if *private == PrivateTargets::None {
            let port = url.port_or_known_default().unwrap_or_default();
            if !ALLOWED_PORTS.contains(&port) {
                return Err(Error::validation(field(), Rule::EndpointPort));
            }
            let literal: Option<IpAddr> = match url.host() {
                Some(Host::Ipv4(ip)) => Some(ip.into()),
                Some(Host::Ipv6(ip)) => Some(ip.into()),
                _ => None,
            };
            let local_name = url.host_str().is_some_and(|h| {
                let h = h.trim_end_matches('.').to_ascii_lowercase();
                h == "localhost" || h.ends_with(".localhost")
            });
            if literal.is_some_and(|ip| !link_fetch::is_public_ip(ip)) || local_name {
                return Err(Error::validation(field(), Rule::PublicAddress));
            }
        }
        if !seen.insert((e.kind, url.as_str().to_owned())) {
            return Err(Error::validation(field(), Rule::DuplicateId));
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

    fn input(kind: EndpointKind, url: &str) -> EndpointInput {
        EndpointInput { kind, url: url.into() }
    }

    fn field_of(r: Result<()>) -> Option<(String, Rule)> {
        match r {
            Err(Error::Validation { field, rule }) => Some((field, rule)),
            _ => None,
        }
    }

    #[test]
    fn ports_and_addresses_are_checked_when_set() {
        let ok = [
            input(EndpointKind::A2a, "https://a.example/"),
            input(EndpointKind::Mcp, "http://b.example:8080/mcp"),
        ];
        assert!(validate(&ok, &PrivateTargets::None).is_ok());
        let bad_port = [ok[0].clone(), input(EndpointKind::Http, "https://c.example:22/")];
        assert_eq!(
            field_of(validate(&bad_port, &PrivateTargets::None)),
            Some(("endpoints.1.url".into(), Rule::EndpointPort))
        );
        for url in ["http://127.0.0.1/", "http://[::1]:8080/", "http://10.1.2.3/", "http://localhost/"] {
            assert_eq!(
                field_of(validate(&[input(EndpointKind::Http, url)], &PrivateTargets::None)),
                Some(("endpoints.0.url".into(), Rule::PublicAddress)),
                "{url}"
            );
        }
        assert!(
            validate(&[input(EndpointKind::Http, "http://127.0.0.1:39999/")], &PrivateTargets::All).is_ok()
        );
        let twice =
            [input(EndpointKind::Http, "https://a.example"), input(EndpointKind::Http, "https://a.example/")];
        assert_eq!(
            field_of(validate(&twice, &PrivateTargets::None)),
            Some(("endpoints.1.url".into(), Rule::DuplicateId))
        );
    }
}
