//! What the MCP endpoint needs to know about where it is served: the public base URL, and the
//! `Host` and `Origin` values that follow from it.

use std::fmt;

/// Names that always reach a local process, so `curl localhost:…/mcp` works behind any base URL.
/// A DNS-rebinding page still fails: its requests carry the attacker's name, not these.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Configuration of the MCP endpoint, derived from the service's base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpConfig {
    base_url: String,
    host: String,
    origin: String,
    max_body_bytes: usize,
}

/// The base URL is not an absolute `http(s)://host[:port][/path]` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid MCP base URL: {}", self.0)
    }
}

impl std::error::Error for ConfigError {}

impl McpConfig {
    /// `base_url` is the public address of the service, e.g. `https://agentdir.example` or
    /// `http://127.0.0.1:8080`; a path is allowed and kept for links, ignored for origins.
    /// `max_body_bytes` caps a request body (the service's own cap on any request).
    pub fn new(base_url: &str, max_body_bytes: usize) -> Result<Self, ConfigError> {
        let uri: http::Uri = base_url.parse().map_err(|e| ConfigError(format!("{base_url:?}: {e}")))?;
        let scheme = match uri.scheme_str() {
            Some(s) if s.eq_ignore_ascii_case("http") => "http",
            Some(s) if s.eq_ignore_ascii_case("https") => "https",
            _ => {
                return Err(ConfigError(format!("{base_url:?}: scheme must be http or https")));
            }
        };
        let authority = uri.authority().ok_or_else(|| ConfigError(format!("{base_url:?}: no host")))?;
        if authority.as_str().contains('@') {
            return Err(ConfigError(format!("{base_url:?}: user info is not allowed")));
        }
        let host = authority.host().to_ascii_lowercase();
        if host.is_empty() {
            return Err(ConfigError(format!("{base_url:?}: no host")));
        }
        // An explicit port keeps the origin exact; rmcp reads a port-less entry as "any port".
        let port = authority.port_u16().unwrap_or(if scheme == "https" { 443 } else { 80 });
        Ok(Self {
            base_url: base_url.trim_end_matches('/').to_owned(),
            origin: format!("{scheme}://{host}:{port}"),
            host,
            max_body_bytes,
        })
    }

    /// The largest request body accepted.
    pub fn max_body_bytes(&self) -> usize {
        self.max_body_bytes
    }

    /// The base URL without a trailing slash, as written in the instructions.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// `Host` values accepted: the base URL's host on any port (a reverse proxy may rewrite
    /// the port), plus loopback.
    pub fn allowed_hosts(&self) -> Vec<String> {
        let mut hosts = vec![self.host.clone()];
        hosts.extend(
            LOOPBACK_HOSTS
                .iter()
                .filter(|h| **h != self.host.trim_matches(['[', ']']))
                .map(|h| (*h).to_owned()),
        );
        hosts
    }

    /// The only browser origin allowed to call the endpoint: the base URL's own. Requests
    /// without an `Origin` header (every non-browser client) are not affected.
    pub fn allowed_origins(&self) -> Vec<String> {
        vec![self.origin.clone()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_base_url() {
        let cfg = McpConfig::new("https://Dir.Example.com/", 1024).expect("valid");
        assert_eq!(cfg.base_url(), "https://Dir.Example.com");
        assert_eq!(cfg.allowed_hosts(), ["dir.example.com", "localhost", "127.0.0.1", "::1"]);
        assert_eq!(cfg.allowed_origins(), ["https://dir.example.com:443"]);
    }

    #[test]
    fn loopback_base_url_with_port() {
        let cfg = McpConfig::new("http://127.0.0.1:8080", 1024).expect("valid");
        assert_eq!(cfg.allowed_hosts(), ["127.0.0.1", "localhost", "::1"]);
        assert_eq!(cfg.allowed_origins(), ["http://127.0.0.1:8080"]);
    }

    #[test]
    fn ipv6_base_url() {
        let cfg = McpConfig::new("http://[::1]:9000/dir", 1024).expect("valid");
        assert_eq!(cfg.allowed_hosts(), ["[::1]", "localhost", "127.0.0.1"]);
        assert_eq!(cfg.allowed_origins(), ["http://[::1]:9000"]);
    }

    #[test]
    fn rejects_what_is_not_an_http_url() {
        for bad in
            ["", "dir.example.com", "ftp://dir.example.com", "/relative", "http://user@dir.example.com"]
        {
            assert!(McpConfig::new(bad, 1024).is_err(), "{bad:?} accepted");
        }
    }
}
