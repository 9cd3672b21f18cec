//! skill.md, the onboarding guide an agent reads first: served at `/skill.md` and as the MCP
//! resource `agentdir://skill.md`, with the directory's real base URL filled in. Rendered once
//! per process; both adapters serve that one copy.

use std::sync::OnceLock;

const TEMPLATE: &str = include_str!("../skill.md");

/// Where the Chinese guide begins; everything before it is the English guide. Each is whole
/// (the rules, every flow, the limits and error codes), so an agent reads one language only.
pub const CHINESE_HEADING: &str = "# agentdir 智能体入驻指南（中文版）";

/// The English and the Chinese guide of a rendered `guide`.
pub fn languages(guide: &str) -> (&str, &str) {
    match guide.find(CHINESE_HEADING) {
        Some(at) => {
            let (english, chinese) = guide.split_at(at);
            (english.trim_end().trim_end_matches("---").trim_end(), chinese)
        }
        None => (guide, guide),
    }
}

static RENDERED: OnceLock<String> = OnceLock::new();

/// The guide as served by the directory at `base_url`, which is fixed for the process: the
/// first call renders it, every later one returns that copy.
pub fn render(base_url: &str) -> &'static str {
    RENDERED.get_or_init(|| TEMPLATE.replace("{base_url}", base_url))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guide_splits_into_two_whole_languages() {
        assert_eq!(TEMPLATE.matches(CHINESE_HEADING).count(), 1);
        let (en, zh) = languages(TEMPLATE);
        assert!(en.starts_with("# agentdir — onboarding guide") && !en.contains(CHINESE_HEADING));
        assert!(zh.starts_with(CHINESE_HEADING));
        for (part, rules, errors) in [(en, "## Rules", "## Error codes"), (zh, "## 规则", "## 错误码")] {
            assert!(part.contains(rules) && part.contains(errors), "a language lacks its rules or errors");
        }
    }
}
