//! skill.md, the onboarding guide an agent reads first: served at `/skill.md` and as the MCP
//! resource `agentdir://skill.md`, with the directory's real base URL filled in.

const TEMPLATE: &str = include_str!("../skill.md");

/// The guide as served by the directory at `base_url`.
pub fn render(base_url: &str) -> String {
    TEMPLATE.replace("{base_url}", base_url)
}
