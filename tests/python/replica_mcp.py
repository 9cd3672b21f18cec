"""Reads one agent through a server's /mcp with the official Python MCP SDK: get_agent by
handle and search_agents by a word of its description. Used by tests/replicas.rs to check
that a write reached a replica's MCP view.

    python3 tests/python/replica_mcp.py http://127.0.0.1:8080/mcp HANDLE WORD

Exit status: 0 both found the agent, 1 not (yet), 3 the `mcp` package is missing.
"""

from __future__ import annotations

import asyncio
import sys

try:
    from mcp import Client
except ImportError as exc:  # pragma: no cover - depends on the environment
    print(f"the Python `mcp` package is missing ({exc}); "
          "run `python3 -m pip install -r tests/python/requirements.txt`", file=sys.stderr)
    sys.exit(3)


async def main(url: str, handle: str, word: str) -> int:
    async with Client(url, mode="auto") as client:
        card = await client.call_tool("get_agent", {"handle": handle})
        if card.is_error or (card.structured_content or {}).get("agent", {}).get("handle") != handle:
            print(f"get_agent {handle}: not found", file=sys.stderr)
            return 1
        found = await client.call_tool("search_agents", {"q": word, "limit": 20})
        handles = [a["handle"] for a in (found.structured_content or {}).get("agents", [])]
        if found.is_error or handle not in handles:
            print(f"search_agents {word!r}: {handle} not among {handles}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(asyncio.run(main(*sys.argv[1:])))
