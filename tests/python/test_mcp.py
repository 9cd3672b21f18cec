"""The agentdir MCP endpoint driven by the official Python MCP SDK (`mcp` 2.3.x).

Lists the tools, calls every tool, reads the resources, completes a handle, and checks the
bilingual notice and the error envelope, both in the `auto` lifecycle (server/discover) and the
`legacy` one (initialize). The server must already hold at least one agent and one call.

    python3 tests/python/test_mcp.py http://127.0.0.1:8080/mcp
    AGENTDIR_MCP_URL=http://127.0.0.1:8080/mcp python3 tests/python/test_mcp.py

Exit status: 0 all checks passed, 1 a check failed, 2 usage, 3 the `mcp` package is missing.
Run it from outside the repository root: there, the Rust crate folder `mcp/` would shadow the
package (the Rust test runs it from a temporary directory).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

try:
    from mcp import Client
    from mcp.types import ResourceTemplateReference
except ImportError as exc:  # pragma: no cover - depends on the environment
    print(
        f"the Python `mcp` package is missing ({exc}); "
        "run `python3 -m pip install -r tests/python/requirements.txt`",
        file=sys.stderr,
    )
    sys.exit(3)

TOOLS = ["search_agents", "get_agent", "search_calls", "get_call", "list_collaborations", "get_stats"]


class CheckFailed(Exception):
    pass


def check(condition: bool, what: str) -> None:
    if not condition:
        raise CheckFailed(what)


def text_of(result) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def expect_ok(name: str, result) -> dict:
    check(not result.is_error, f"{name} returned isError: {text_of(result)}")
    body = result.structured_content
    check(isinstance(body, dict), f"{name}: no structuredContent")
    notice = body.get("notice") or {}
    check(bool(notice.get("en")) and bool(notice.get("zh")), f"{name}: no bilingual notice in {body}")
    shown = text_of(result)
    check(notice["en"] in shown and notice["zh"] in shown, f"{name}: the text does not carry the notice")
    return body


def expect_error(name: str, result, code: str, field: str | None) -> dict:
    check(result.is_error is True, f"{name}: expected isError, got {text_of(result)}")
    envelope = json.loads(text_of(result))
    error = envelope.get("error") or {}
    check(error.get("code") == code, f"{name}: expected code {code}, got {envelope}")
    check(bool(error.get("message_en")) and bool(error.get("message_zh")), f"{name}: not bilingual: {envelope}")
    check(error.get("field") == field, f"{name}: expected field {field}, got {envelope}")
    return envelope


async def exercise(url: str, mode: str) -> None:
    async with Client(url, mode=mode) as client:
        listed = await client.list_tools()
        names = [t.name for t in listed.tools]
        check(names == TOOLS, f"tools/list: {names}")
        for tool in listed.tools:
            a = tool.annotations
            check(a is not None and a.read_only_hint is True, f"{tool.name}: readOnlyHint")
            check(a.open_world_hint is False, f"{tool.name}: openWorldHint")
            check(bool(tool.title) and bool(tool.description), f"{tool.name}: title/description")
            check(tool.input_schema.get("type") == "object", f"{tool.name}: inputSchema")
            check((tool.output_schema or {}).get("type") == "object", f"{tool.name}: outputSchema")
        print(f"[{mode}] ok tools/list {names}")

        agents = expect_ok("search_agents", await client.call_tool("search_agents", {"limit": 5}))
        check(len(agents["agents"]) > 0, "search_agents: the server has no agents; seed it first")
        check(agents["limit"] == 5 and agents["offset"] == 0, f"search_agents paging: {agents}")
        handle = agents["agents"][0]["handle"]
        print(f"[{mode}] ok tool search_agents (total {agents['total']}, first {handle})")
        # Inspector-style string arguments are read as the numbers they declare.
        as_text = expect_ok("search_agents", await client.call_tool("search_agents", {"limit": "1"}))
        check(len(as_text["agents"]) == 1 and as_text["limit"] == 1, f"string limit: {as_text}")

        card = expect_ok("get_agent", await client.call_tool("get_agent", {"handle": handle}))
        check(card["agent"]["handle"] == handle, f"get_agent: {card['agent']['handle']} != {handle}")
        check("mailbox" not in card["agent"], "get_agent: the card shows a mailbox")
        print(f"[{mode}] ok tool get_agent {handle}")

        calls = expect_ok("search_calls", await client.call_tool("search_calls", {}))
        check(len(calls["posts"]) > 0, "search_calls: the server has no calls; seed it first")
        call_id = calls["posts"][0]["id"]
        check(call_id.startswith("post_"), f"search_calls: id {call_id}")
        print(f"[{mode}] ok tool search_calls (total {calls['total']}, first {call_id})")

        detail = expect_ok("get_call", await client.call_tool("get_call", {"id": call_id}))
        check(detail["post"]["id"] == call_id, "get_call: wrong call")
        check(isinstance(detail["replies"], list), "get_call: no replies list")
        print(f"[{mode}] ok tool get_call {call_id}")

        collabs = expect_ok("list_collaborations", await client.call_tool("list_collaborations", {"handle": handle}))
        check(isinstance(collabs["collabs"], list) and "total" in collabs, f"list_collaborations: {collabs}")
        print(f"[{mode}] ok tool list_collaborations {handle} (total {collabs['total']})")

        stats = expect_ok("get_stats", await client.call_tool("get_stats", {}))
        check(stats["agents"] >= len(agents["agents"]) and stats["posts"] >= 1, f"get_stats: {stats}")
        print(f"[{mode}] ok tool get_stats {stats['agents']} agents")

        # Errors are tool results with the bilingual envelope, not protocol errors.
        expect_error("get_agent", await client.call_tool("get_agent", {"handle": "no-such-agent-here"}), "not_found", None)
        expect_error("search_agents", await client.call_tool("search_agents", {"limit": 500}), "validation_failed", "limit")
        expect_error("search_agents", await client.call_tool("search_agents", {"limit": "ten"}), "validation_failed", "limit")
        expect_error("search_calls", await client.call_tool("search_calls", {"kind": "selling"}), "validation_failed", "kind")
        expect_error("get_call", await client.call_tool("get_call", {"id": "post_nope"}), "not_found", None)
        print(f"[{mode}] ok errors")

        resources = await client.list_resources()
        check([str(r.uri) for r in resources.resources] == ["agentdir://skill.md"], f"resources/list: {resources}")
        templates = await client.list_resource_templates()
        uris = [t.uri_template for t in templates.resource_templates]
        check(uris == ["agentdir://agents/{handle}", "agentdir://calls/{id}"], f"templates: {uris}")

        skill = (await client.read_resource("agentdir://skill.md")).contents[0]
        check(skill.mime_type == "text/markdown" and "agentdir" in skill.text, "skill.md")
        print(f"[{mode}] ok resource skill.md ({len(skill.text)} chars)")

        read_card = (await client.read_resource(f"agentdir://agents/{handle}")).contents[0]
        check(read_card.mime_type == "application/json", "card resource mime type")
        check(json.loads(read_card.text) == card, "the card resource differs from get_agent")
        print(f"[{mode}] ok resource agent card {handle}")

        read_call = (await client.read_resource(f"agentdir://calls/{call_id}")).contents[0]
        check(json.loads(read_call.text) == detail, "the call resource differs from get_call")
        print(f"[{mode}] ok resource call {call_id}")

        # The whole handle as the prefix: it sorts first among the handles it starts, so it is
        # always among the suggestions however many agents there are.
        completion = await client.complete(
            ResourceTemplateReference(uri="agentdir://agents/{handle}"), {"name": "handle", "value": handle}
        )
        values = completion.completion.values
        check(values[:1] == [handle] and all(v.startswith(handle) for v in values), f"completion: {values}")
        print(f"[{mode}] ok completion {handle} -> {len(values)} handles")


async def main() -> int:
    url = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("AGENTDIR_MCP_URL")
    if not url:
        print("usage: test_mcp.py <http://host:port/mcp>  (or set AGENTDIR_MCP_URL)", file=sys.stderr)
        return 2
    try:
        for mode in ("auto", "legacy"):
            await exercise(url, mode)
    except CheckFailed as failure:
        print(f"FAILED: {failure}", file=sys.stderr)
        return 1
    print("all MCP checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
