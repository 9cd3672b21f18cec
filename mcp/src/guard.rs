//! The checks every request to the endpoint passes before anything reads it, for both paths
//! (rmcp's and the short one of `fast`): `Host` against DNS rebinding and `Origin` against
//! cross-site browser pages, both derived from the base URL (see [`McpConfig`]).
//!
//! One implementation: rmcp's own copies of these two checks are switched off (see
//! `transport`), and these answer as rmcp's did: the same statuses and bodies.

use std::convert::Infallible;

use bytes::Bytes;
use http::{HeaderMap, Response, StatusCode, Uri, header};
use http_body_util::combinators::BoxBody;

use crate::McpConfig;

pub(crate) type BoxResponse = Response<BoxBody<Bytes, Infallible>>;

/// Where requests may come from.
pub(crate) struct Guard {
    /// Host names accepted, on any port (see [`McpConfig::allowed_hosts`]).
    hosts: Vec<String>,
    /// The one browser origin accepted (see [`McpConfig::allowed_origins`]).
    origin: Origin,
}

#[derive(Debug, PartialEq, Eq)]
struct Origin {
    scheme: String,
    host: String,
    /// Explicit, or the scheme's default.
    port: Option<u16>,
}

impl Origin {
    fn parse(value: &str) -> Option<Origin> {
        let uri = Uri::try_from(value.trim()).ok()?;
        let scheme = uri.scheme_str()?.to_ascii_lowercase();
        let authority = uri.authority()?;
        let port = authority.port_u16().or(match scheme.as_str() {
            "http" => Some(80),
            "https" => Some(443),
            _ => None,
        });
        Some(Origin { scheme, host: normalized(authority.host()), port })
    }
}

/// A host name as compared: without IPv6 brackets, lower-case.
fn normalized(host: &str) -> String {
    host.trim_matches(['[', ']']).to_ascii_lowercase()
}

impl Guard {
    pub(crate) fn new(cfg: &McpConfig) -> Guard {
        let origin = cfg.allowed_origins().iter().find_map(|o| Origin::parse(o));
        Guard {
            hosts: cfg.allowed_hosts().iter().map(|h| normalized(h)).collect(),
            // The configuration always yields a parseable origin; an empty one admits no page.
            origin: origin.unwrap_or(Origin { scheme: String::new(), host: String::new(), port: None }),
        }
    }

    /// `Ok` when the request may go on, else why it is refused.
    pub(crate) fn check(&self, uri: &Uri, headers: &HeaderMap) -> Result<(), Refusal> {
        let host = match headers.get(header::HOST) {
            Some(value) => {
                let value =
                    value.to_str().map_err(|_| bad_request("Bad Request: Invalid Host header encoding"))?;
                let authority = http::uri::Authority::try_from(value)
                    .map_err(|_| bad_request("Bad Request: Invalid Host header"))?;
                normalized(authority.host())
            }
            // HTTP/2 carries the host in `:authority`.
            None => normalized(
                uri.authority().ok_or_else(|| bad_request("Bad Request: missing Host header"))?.host(),
            ),
        };
        if !self.hosts.contains(&host) {
            tracing::warn!(host, "refused a request with a Host not served here (DNS rebinding?)");
            return Err(forbidden("Forbidden: Host header is not allowed"));
        }
        let Some(origin) = headers.get(header::ORIGIN) else {
            return Ok(());
        };
        let origin = origin.to_str().map_err(|_| forbidden("Forbidden: Invalid Origin header encoding"))?;
        if origin.trim().eq_ignore_ascii_case("null") {
            return Err(forbidden("Forbidden: Origin header is not allowed"));
        }
        match Origin::parse(origin) {
            None => Err(forbidden("Forbidden: Invalid Origin header")),
            Some(o) if o == self.origin => Ok(()),
            Some(_) => {
                tracing::warn!(origin, "refused a request from a page of another origin");
                Err(forbidden("Forbidden: Origin header is not allowed"))
            }
        }
    }
}

/// A refused request: its status and the plain-text reason rmcp gives.
#[derive(Debug)]
pub(crate) struct Refusal {
    status: StatusCode,
    reason: &'static str,
}

fn forbidden(reason: &'static str) -> Refusal {
    Refusal { status: StatusCode::FORBIDDEN, reason }
}

fn bad_request(reason: &'static str) -> Refusal {
    Refusal { status: StatusCode::BAD_REQUEST, reason }
}

impl Refusal {
    /// JSON-RPC's error with the bilingual envelope, as every other refusal of `/mcp`.
    pub(crate) fn into_response(self) -> BoxResponse {
        let error = crate::error::ToolError::refused(self.status, self.reason);
        crate::fast::json_rpc_error(self.status, -32600, &error, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(guard: &Guard, headers: &[(&str, &str)]) -> Result<(), StatusCode> {
        let mut map = HeaderMap::new();
        for (k, v) in headers {
            map.append(
                header::HeaderName::from_bytes(k.as_bytes()).expect("name"),
                v.parse().expect("value"),
            );
        }
        guard.check(&Uri::from_static("/mcp"), &map).map_err(|refusal| refusal.status)
    }

    #[test]
    fn hosts_and_origins_of_the_base_url_and_loopback_only() {
        let guard = Guard::new(&McpConfig::new("https://Dir.Example.com", 1024).expect("valid"));
        for ok in [
            vec![("host", "dir.example.com")],
            vec![("host", "DIR.example.com:8443")],
            vec![("host", "127.0.0.1:3000")],
            vec![("host", "[::1]:3000")],
            vec![("host", "localhost"), ("origin", "https://dir.example.com")],
            vec![("host", "localhost"), ("origin", "https://DIR.example.com:443")],
        ] {
            assert_eq!(verdict(&guard, &ok), Ok(()), "{ok:?}");
        }
        for (bad, status) in [
            (vec![("host", "evil.example")], StatusCode::FORBIDDEN),
            (vec![("host", "dir.example.com.evil.example")], StatusCode::FORBIDDEN),
            (vec![("host", "a b")], StatusCode::BAD_REQUEST),
            (vec![], StatusCode::BAD_REQUEST),
            (vec![("host", "localhost"), ("origin", "https://evil.example")], StatusCode::FORBIDDEN),
            (vec![("host", "localhost"), ("origin", "http://dir.example.com")], StatusCode::FORBIDDEN),
            (vec![("host", "localhost"), ("origin", "https://dir.example.com:8443")], StatusCode::FORBIDDEN),
            (vec![("host", "localhost"), ("origin", "null")], StatusCode::FORBIDDEN),
            (vec![("host", "localhost"), ("origin", "not an origin")], StatusCode::FORBIDDEN),
        ] {
            assert_eq!(verdict(&guard, &bad), Err(status), "{bad:?}");
        }
    }
}
