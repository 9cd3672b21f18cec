"""Generates a Python client from a live server's openapi.json and drives every flow through it.

Usage: AGENTDIR_BIN=… AGENTDIR_DATA_DIR=… python3 generated_client.py BASE_URL WORK_DIR

openapi-python-client writes a typed package from the document alone; this script then uses
only the generated models and functions, as a newcomer would, on real data: two agents
register (one listing endpoints the server checks: the directory's own API as an `http`
endpoint, its MCP server, and an `a2a` endpoint that is not one), profile updates that leave the
other fields alone, offerings, a call with a reply, then deleted, contact requests both ways
(one accepted, one declined), a confirmed collaboration, a rename, the change feed after the
deletion and the rename, the export with its held handle, the signed statement and the keys.
Every answer is parsed by the generated models (`raise_on_unexpected_status`), so a status or a
value the document does not describe fails here. Run by tests/docs.rs.
"""

import importlib
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

PACKAGE = "agentdir_client"


def generate(base_url: str, work_dir: Path) -> None:
    subprocess.run(
        [
            sys.executable, "-m", "openapi_python_client", "generate",
            "--url", f"{base_url}/openapi.json",
            "--meta", "none",
            "--output-path", str(work_dir / PACKAGE),
            "--overwrite",
        ],
        check=True,
    )
    sys.path.insert(0, str(work_dir))


def op(name: str):
    """The generated module of one operation, found by its operationId (snake_case) under any tag."""
    api = Path(importlib.import_module(f"{PACKAGE}.api").__path__[0])
    found = [p for p in api.glob(f"*/{name}.py")]
    assert len(found) == 1, f"no single module for operation {name}: {found}"
    return importlib.import_module(f"{PACKAGE}.api.{found[0].parent.name}.{name}")


def main() -> int:
    base_url, work_dir = sys.argv[1], Path(sys.argv[2])
    generate(base_url, work_dir)
    client_mod = importlib.import_module(f"{PACKAGE}.client")
    models = importlib.import_module(f"{PACKAGE}.models")
    types = importlib.import_module(f"{PACKAGE}.types")

    public = client_mod.Client(base_url=base_url, raise_on_unexpected_status=True)

    def register(prefix: str, **extra):
        handle = f"{prefix}-{uuid.uuid4().hex[:10]}"
        registered = op("register_agent").sync(
            client=public,
            body=models.Registration.from_dict({
                "handle": handle, "name": "Generated Client", "owner": f"Owner of {prefix}",
                "mailbox": f"{handle}@example.org", "accept_rules": True,
                "description_en": "Registered by a client generated from openapi.json.",
                "capabilities": ["testing"], **extra,
            }),
        )
        assert isinstance(registered, models.Registered), registered
        assert registered.api_key.startswith("cq_"), registered.api_key
        assert registered.agent.handle == handle
        key = client_mod.AuthenticatedClient(
            base_url=base_url, token=registered.api_key, raise_on_unexpected_status=True
        )
        return handle, key

    # Agent A lists endpoints the server checks: its own API (live), its MCP server, and an
    # `a2a` endpoint at a URL that holds no agent card (invalid, with a reason).
    a, a_key = register(
        "gen-a",
        tagline="Generated tagline",
        homepage=f"{base_url}/skill.md",
        model="test-model",
        endpoints=[
            {"kind": "http", "url": f"{base_url}/api"},
            {"kind": "mcp", "url": f"{base_url}/mcp"},
            {"kind": "a2a", "url": f"{base_url}/api/stats"},
        ],
    )
    b, b_key = register("gen-b")
    # Contact requests want a verified mailbox (level 1): the operator command stands in for
    # the email round trip.
    for handle in (a, b):
        subprocess.run(
            [os.environ["AGENTDIR_BIN"], "admin", "--data-dir", os.environ["AGENTDIR_DATA_DIR"],
             "--actor", "generated-client", "verify-mailbox", handle],
            check=True, capture_output=True,
        )

    profile = op("get_me").sync(client=a_key)
    assert isinstance(profile, models.OwnProfile), profile
    assert profile.mailbox == f"{a}@example.org"

    # A patch of one field leaves the others as they were (no field is sent as null).
    patched = op("update_me").sync(client=a_key, body=models.ProfilePatch(tagline="Patched tagline"))
    assert isinstance(patched, models.OwnProfile), patched
    assert (patched.agent.tagline, patched.agent.homepage, patched.agent.model) == (
        "Patched tagline", f"{base_url}/skill.md", "test-model"
    ), patched.agent

    # The card once every endpoint was checked: real statuses, reasons and counts.
    deadline = time.monotonic() + 60
    while True:
        card = op("get_agent_card").sync(client=public, handle=a)
        assert isinstance(card, models.AgentCard), card
        endpoints = card.agent.endpoints
        if all(e.status != "unchecked" for e in endpoints):
            break
        assert time.monotonic() < deadline, [e.to_dict() for e in endpoints]
        time.sleep(0.2)
    seen = [(e.kind, e.status) for e in endpoints]
    assert seen[0] == ("http", "live"), seen
    assert seen[1] == ("mcp", "live"), seen
    assert endpoints[1].tool_count, endpoints[1].to_dict()
    assert seen[2][1] == "invalid", seen
    assert endpoints[2].reason == "not_a2a_card", endpoints[2].to_dict()
    assert endpoints[0].reason is None, endpoints[0].to_dict()

    hits = op("search_agents").sync(client=public, q=a)
    assert isinstance(hits, models.AgentList), hits
    assert any(h.handle == a and h.endpoints[0].status == "live" for h in hits.agents), hits.to_dict()

    # Offerings, and contact requests both ways.
    offered = op("replace_offerings").sync(
        client=a_key,
        body=models.OfferingsReplacement.from_dict(
            {"offerings": [{"title": "Translation", "deliverable": "A translated document", "mode": "free"}]}
        ),
    )
    assert isinstance(offered, models.OfferingList), offered
    a_offering = offered.offerings[0].id
    b_offering = op("replace_offerings").sync(
        client=b_key,
        body=models.OfferingsReplacement.from_dict(
            {"offerings": [{"title": "Review", "deliverable": "A review", "mode": "quote"}]}
        ),
    ).offerings[0].id

    def ask(client, to: str, offering: str) -> str:
        sent = op("send_contact_request").sync(
            client=client,
            handle=to,
            body=models.NewContactRequest.from_dict({
                "offering_id": offering, "purpose": "Translate our README",
                "deliverable": "A Chinese README", "compensation": "none",
            }),
        )
        assert isinstance(sent, models.ContactRequestDetail), sent
        return sent.request.id

    to_a = ask(b_key, a, a_offering)
    to_b = ask(a_key, b, b_offering)
    accepted = op("accept_contact_request").sync(client=a_key, id=to_a)
    assert accepted.request.status == "accepted", accepted.to_dict()
    declined = op("decline_contact_request").sync(client=b_key, id=to_b)
    assert declined.request.status == "declined", declined.to_dict()
    mine = op("list_my_contact_requests").sync(client=a_key)
    assert {r.id for r in mine.requests} >= {to_a, to_b}, mine.to_dict()

    # A call, a reply, then the call deleted.
    call = op("post_call").sync(
        client=a_key,
        body=models.NewCall.from_dict(
            {"kind": "seeking", "title": "Looking for a reviewer", "body": "A generated client posted this call.",
             "tags": ["review"]}
        ),
    )
    assert isinstance(call, models.CallSummary), call
    assert call.id.startswith("post_"), call.id
    reply = op("reply_to_call").sync(client=b_key, id=call.id, body=models.NewReply(body="I can review it."))
    assert isinstance(reply, models.ReplyView), reply
    detail = op("get_call").sync(client=public, id=call.id)
    assert isinstance(detail, models.CallDetail), detail
    assert detail.post.title == "Looking for a reviewer"
    assert detail.notice.en and detail.notice.zh
    deleted = op("delete_call").sync(client=a_key, id=call.id)
    assert isinstance(deleted, models.Deleted), deleted

    # A confirmed collaboration.
    proposed = op("propose_collab").sync(
        client=a_key, body=models.NewCollab.from_dict({"partner": b, "summary": "Translated the manual"})
    )
    assert isinstance(proposed, models.CollabDetail), proposed
    confirmed = op("confirm_collab").sync(client=b_key, id=proposed.collab.id)
    assert confirmed.collab.status == "confirmed", confirmed.to_dict()

    # A rename: the old handle is held for the agent.
    renamed_to = f"gen-r-{uuid.uuid4().hex[:10]}"
    renamed = op("change_handle").sync(client=b_key, body=models.HandleChange(handle=renamed_to))
    assert isinstance(renamed, models.Renamed), renamed
    assert renamed.previous_handle == b

    # The feed, read to its end, holds the deleted call as a delete, the old handle as a delete
    # and every live entity as an upsert.
    feed, after = [], types.UNSET
    while True:
        page = op("list_changes").sync(client=public, after=after, limit=100)
        assert isinstance(page, models.ChangeFeed), page
        feed.extend(page.changes)
        after = page.next_
        if not page.has_more:
            break
    ops = {(c.kind, c.id): c.op for c in feed}
    assert ops.get(("call", call.id)) == "delete", ops
    assert ops.get(("agent", b)) == "delete", ops
    assert ops.get(("agent", renamed_to)) == "upsert", ops
    assert ops.get(("agent", a)) == "upsert", ops

    export = op("export_me").sync(client=b_key)
    assert isinstance(export, models.Export), export
    assert [(h.handle, h.reason) for h in export.held_handles] == [(b, "renamed")], export.to_dict()

    statement = op("get_statement").sync(client=public, handle=a)
    assert isinstance(statement, models.SignedStatement), statement
    keys = op("get_jwks").sync(client=public)
    assert isinstance(keys, models.Jwks), keys
    kid = statement.to_dict().get("header", {}).get("kid")
    assert kid is None or kid in {k.kid for k in keys.keys}, (kid, keys.to_dict())

    # A documented error comes back as the documented envelope model.
    again = op("register_agent").sync_detailed(
        client=public,
        body=models.Registration(
            handle=a, name="Again", owner="Ada Example",
            mailbox=f"{a}@example.org", accept_rules=True, description_en="Duplicate.",
        ),
    )
    assert again.status_code == 409, again.status_code
    assert isinstance(again.parsed, models.ErrorEnvelope), again.parsed
    assert again.parsed.error.code == "handle_taken"

    print(f"generated client: registered {a} and {b}, posted and deleted {call.id}, renamed to {renamed_to}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
