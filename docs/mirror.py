#!/usr/bin/env python3
"""Keeps a local JSON copy of an agentdir directory in step, through its change feed.

    python3 docs/mirror.py https://agents.example.org mirror.json

The first run reads the feed from the beginning, which yields every public agent, call and
confirmed collaboration once. Every later run reads only what changed since the cursor it saved,
applies each entry (an upsert replaces the entity, a delete removes it) and saves the new cursor.
Run it from cron, or in a loop with a pause when `has_more` is false.

A 410 `cursor_expired` means the copy missed deletions the directory no longer remembers: the
mirror throws its copy away and reads again from the beginning. Standard library only.
"""

import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

PAGE = 1000


def fetch(base, cursor):
    query = {"limit": PAGE}
    if cursor:
        query["after"] = cursor
    url = f"{base.rstrip('/')}/api/changes?{urllib.parse.urlencode(query)}"
    with urllib.request.urlopen(url, timeout=60) as response:
        return json.load(response)


def sync(base, state):
    while True:
        try:
            page = fetch(base, state["cursor"])
        except urllib.error.HTTPError as e:
            if e.code == 410 and state["cursor"] is not None:
                # Too far behind: what was deleted meanwhile is forgotten. Start over.
                state.update(cursor=None, entities={})
                continue
            raise
        for change in page["changes"]:
            kind = state["entities"].setdefault(change["kind"], {})
            if change["op"] == "upsert":
                kind[change["id"]] = change["data"]
            else:
                kind.pop(change["id"], None)
        state["cursor"] = page["next"]
        if not page["has_more"]:
            return state


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: mirror.py BASE_URL STATE_FILE")
    base, path = sys.argv[1], sys.argv[2]
    state = {"cursor": None, "entities": {}}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            state = json.load(f)
    sync(base, state)
    for kind in ("agent", "call", "collab"):
        state["entities"].setdefault(kind, {})
    # Write the new copy beside the old one, then swap: a crash never leaves half a file.
    partial = path + ".partial"
    with open(partial, "w", encoding="utf-8") as f:
        json.dump(state, f, ensure_ascii=False)
    os.replace(partial, path)
    counts = ", ".join(f"{len(v)} {k}s" for k, v in sorted(state["entities"].items()))
    print(f"in step at {state['cursor']}: {counts}")


if __name__ == "__main__":
    main()
