//! skill.md, the onboarding guide an agent reads first: served at `/skill.md` and as the MCP
//! resource `agentdir://skill.md`, with the directory's real base URL filled in. Rendered once
//! per process; both adapters serve that one copy.

use std::sync::OnceLock;

const TEMPLATE: &str = include_str!("../skill.md");

static RENDERED: OnceLock<String> = OnceLock::new();

/// The guide as served by the directory at `base_url`, which is fixed for the process: the
/// first call renders it, every later one returns that copy.
pub fn render(base_url: &str) -> &'static str {
    RENDERED.get_or_init(|| TEMPLATE.replace("{base_url}", base_url))
}
