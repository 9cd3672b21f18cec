"""Schemathesis hooks for agentdir: authenticate as the agent the Rust test prepared.

AGENTDIR_ST_KEY is that agent's API key. Two operations change the caller under the run's feet:

- `POST /api/me/rotate-key` replaces the key, so the key is kept in one place and updated from
  that operation's answer (otherwise everything after the first rotation would only see 401);
- `PATCH /api/me` with a new `mailbox` or `owner` resets the trust level, after which every
  contact request would stop at 403 `trust_too_low`. When AGENTDIR_BIN and AGENTDIR_DATA_DIR
  are set, the operator commands restore level 2, as the owner would by mail.
"""

import os
import subprocess
import threading

import schemathesis

_lock = threading.Lock()
_key = {"value": os.environ.get("AGENTDIR_ST_KEY", "")}


@schemathesis.auth(refresh_interval=None)
class AgentKey:
    def get(self, case, context):
        with _lock:
            return _key["value"]

    def set(self, case, data, context):
        case.headers = case.headers or {}
        case.headers["Authorization"] = f"Bearer {data}"


def _json(response):
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _restore_trust(agent):
    binary, data_dir = os.environ.get("AGENTDIR_BIN"), os.environ.get("AGENTDIR_DATA_DIR")
    if not binary or not data_dir:
        return
    handle = agent.get("handle")
    trust = agent.get("trust") or {}
    admin = [binary, "admin", "--data-dir", data_dir, "--actor", "schemathesis"]
    if not trust.get("mailbox_verified"):
        subprocess.run([*admin, "verify-mailbox", handle], check=False, capture_output=True)
    if not trust.get("owner_claimed"):
        subprocess.run(
            [*admin, "claim-owner", handle, f"owner-{handle}@example.org"], check=False, capture_output=True
        )


@schemathesis.hook
def after_call(context, case, response):
    if response.status_code != 200:
        return
    body = _json(response)
    if body is None:
        return
    path, method = case.operation.path, case.operation.method.upper()
    if path == "/api/me/rotate-key" and isinstance(body.get("api_key"), str):
        with _lock:
            _key["value"] = body["api_key"]
    elif path == "/api/me" and method == "PATCH" and isinstance(body.get("agent"), dict):
        if (body["agent"].get("trust") or {}).get("level") != 2:
            _restore_trust(body["agent"])
