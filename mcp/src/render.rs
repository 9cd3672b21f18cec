//! Turns a port's answer into a `tools/call` result: structured content for programs, a short
//! text for people and models, and `isError` results carrying the REST error envelope.

use std::borrow::Cow;

use rmcp::model::{CallToolResult, ContentBlock};
use serde::Deserialize;

use crate::{ToolError, port::ToolOutput};

pub(crate) fn tool_result<T: ToolOutput>(answer: Result<T, ToolError>) -> CallToolResult {
    let output = match answer {
        Ok(output) => output,
        Err(error) => return error_result(&error),
    };
    let value = match serde_json::to_value(&output) {
        Ok(value) => value,
        Err(cause) => {
            tracing::error!(%cause, "tool output did not serialize");
            return error_result(&ToolError::internal());
        }
    };
    let text = text_of(&output, Envelope::deserialize(&value).unwrap_or_default());
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(value);
    result
}

/// The successful `tools/call` result of an output the core holds rendered, as JSON bytes for a
/// revision before result types: the same result as [`tool_result`] (`CallToolResult` as rmcp
/// writes it for those revisions: content, structuredContent, isError), its structured content
/// framed from the rendered bytes as they are. `None` for an output not held rendered.
pub(crate) fn framed_tool_result<T: ToolOutput>(output: &T) -> Option<Vec<u8>> {
    let json = output.rendered_json()?;
    let envelope = serde_json::from_slice(json).ok()?;
    let content = serde_json::to_vec(&ContentBlock::text(text_of(output, envelope))).ok()?;
    let mut framed = Vec::with_capacity(content.len() + json.len() + 64);
    framed.extend_from_slice(b"{\"content\":[");
    framed.extend_from_slice(&content);
    framed.extend_from_slice(b"],\"structuredContent\":");
    framed.extend_from_slice(json);
    framed.extend_from_slice(b",\"isError\":false}");
    Some(framed)
}

/// The envelope an error travels in is JSON text only: the TypeScript SDK (Inspector, Claude
/// clients) validates any `structuredContent` against the tool's output schema even when
/// `isError`.
pub(crate) fn error_result(error: &ToolError) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(error.envelope().to_string())])
}

/// What every answer's envelope may carry besides its data: the paging of a list and the
/// untrusted-content notice.
#[derive(Default, Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    notice: Option<Notice<'a>>,
    total: Option<u64>,
    limit: Option<u64>,
    offset: Option<u64>,
}

#[derive(Deserialize)]
struct Notice<'a> {
    #[serde(borrow, default)]
    en: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    zh: Option<Cow<'a, str>>,
}

/// The output's own text, then its paging line and its notice.
fn text_of<T: ToolOutput>(output: &T, envelope: Envelope<'_>) -> String {
    let mut text = output.to_text();
    for extra in
        [paging_line(&envelope), envelope.notice.as_ref().and_then(notice_lines)].into_iter().flatten()
    {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&extra);
    }
    text
}

/// From the list envelope every list shares (`total`, `limit`, `offset`), so a model knows
/// whether to ask for the next page and with which offset.
fn paging_line(envelope: &Envelope<'_>) -> Option<String> {
    let (total, limit, offset) = (envelope.total?, envelope.limit?, envelope.offset?);
    let end = offset.saturating_add(limit).min(total);
    if end <= offset {
        return Some(format!("No results at offset {offset} ({total} in total)."));
    }
    let mut line = format!("Showing {}–{end} of {total}.", offset + 1);
    if end < total {
        line.push_str(&format!(" For more, call again with offset={end}."));
    }
    Some(line)
}

fn notice_lines(notice: &Notice<'_>) -> Option<String> {
    match (&notice.en, &notice.zh) {
        (None, None) => None,
        (en, zh) => Some(
            [en.as_ref().map(|t| format!("Notice: {t}")), zh.as_ref().map(|t| format!("注意：{t}"))]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join("\n"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::Serialize;
    use serde_json::{Value, json};

    use super::*;
    use crate::{ToText, ToolOutput};

    #[derive(Serialize, JsonSchema)]
    struct Page {
        notice: Value,
        agents: Vec<String>,
        total: u64,
        limit: u64,
        offset: u64,
    }

    impl ToolOutput for Page {}

    impl ToText for Page {
        fn to_text(&self) -> String {
            self.agents
                .iter()
                .enumerate()
                .map(|(i, a)| format!("{}. {a}", i + 1))
                .collect::<Vec<_>>()
                .join("\n")
        }
    }

    fn page(total: u64, limit: u64, offset: u64) -> Page {
        Page {
            notice: json!({"en": "Untrusted.", "zh": "不可信。"}),
            agents: vec!["alpha".into()],
            total,
            limit,
            offset,
        }
    }

    fn text_of(result: &CallToolResult) -> String {
        result.content[0].as_text().map(|t| t.text.clone()).unwrap_or_default()
    }

    #[test]
    fn success_has_structure_text_paging_and_notice() {
        let result = tool_result(Ok(page(45, 20, 20)));
        assert_eq!(result.is_error, Some(false));
        assert_eq!(result.structured_content.as_ref().map(|v| v["total"].clone()), Some(json!(45)));
        assert_eq!(
            text_of(&result),
            "1. alpha\n\nShowing 21–40 of 45. For more, call again with offset=40.\n\n\
             Notice: Untrusted.\n注意：不可信。"
        );
    }

    #[test]
    fn last_and_empty_pages() {
        assert!(text_of(&tool_result(Ok(page(45, 20, 40)))).contains("Showing 41–45 of 45.\n"));
        assert!(text_of(&tool_result(Ok(page(3, 20, 40)))).contains("No results at offset 40"));
    }

    #[test]
    fn error_carries_the_envelope() {
        let error = ToolError::new(
            crate::ErrorKind::NotFound,
            "not_found",
            "No agent with that handle.",
            "没有该代理。",
        );
        let result = tool_result::<Page>(Err(error.clone()));
        assert_eq!(result.is_error, Some(true));
        assert_eq!(result.structured_content, None);
        let text: Value = serde_json::from_str(&text_of(&result)).expect("json text");
        assert_eq!(text, error.envelope());
    }
}
