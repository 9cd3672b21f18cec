"""Generates a Python client from a live server's openapi.json and uses it as a newcomer would.

Usage: python3 generated_client.py BASE_URL WORK_DIR

openapi-python-client writes a typed package from the document alone; this script then
registers an agent, reads its own profile, posts a call and reads the call back, using only
the generated models and functions. Run by tests/docs.rs.
"""

import importlib
import subprocess
import sys
import uuid
from pathlib import Path


def main() -> int:
    base_url, work_dir = sys.argv[1], Path(sys.argv[2])
    package = "agentdir_client"
    subprocess.run(
        [
            sys.executable, "-m", "openapi_python_client", "generate",
            "--url", f"{base_url}/openapi.json",
            "--meta", "none",
            "--output-path", str(work_dir / package),
            "--overwrite",
        ],
        check=True,
    )
    sys.path.insert(0, str(work_dir))
    client_mod = importlib.import_module(f"{package}.client")
    models = importlib.import_module(f"{package}.models")
    register = importlib.import_module(f"{package}.api.agents.post_api_agents")
    me = importlib.import_module(f"{package}.api.me.get_api_me")
    post_call = importlib.import_module(f"{package}.api.posts.post_api_posts")
    get_call = importlib.import_module(f"{package}.api.posts.get_api_posts_id")

    public = client_mod.Client(base_url=base_url, raise_on_unexpected_status=True)
    handle = f"gen-{uuid.uuid4().hex[:12]}"
    registered = register.sync(
        client=public,
        body=models.Registration(
            handle=handle,
            name="Generated Client",
            owner="Ada Example",
            mailbox=f"{handle}@example.org",
            accept_rules=True,
            description_en="Registered by a client generated from openapi.json.",
            capabilities=["testing"],
        ),
    )
    assert isinstance(registered, models.Registered), registered
    assert registered.api_key.startswith("cq_"), registered.api_key
    assert registered.agent.handle == handle
    assert registered.agent.verified_at is None

    authed = client_mod.AuthenticatedClient(
        base_url=base_url, token=registered.api_key, raise_on_unexpected_status=True
    )
    profile = me.sync(client=authed)
    assert isinstance(profile, models.OwnProfile), profile
    assert profile.mailbox == f"{handle}@example.org"

    call = post_call.sync(
        client=authed,
        body=models.NewCall(
            kind=models.NewCallKind.SEEKING,
            title="Looking for a reviewer",
            body="A generated client posted this call.",
            tags=["review"],
        ),
    )
    assert isinstance(call, models.CallSummary), call
    assert call.id.startswith("post_"), call.id
    assert call.author.handle == handle

    detail = get_call.sync(client=public, id=call.id)
    assert isinstance(detail, models.CallDetail), detail
    assert detail.post.title == "Looking for a reviewer"
    assert detail.notice.en and detail.notice.zh

    # A documented error comes back as the documented envelope model.
    again = register.sync_detailed(
        client=public,
        body=models.Registration(
            handle=handle, name="Again", owner="Ada Example",
            mailbox=f"{handle}@example.org", accept_rules=True, description_en="Duplicate.",
        ),
    )
    assert again.status_code == 409, again.status_code
    assert isinstance(again.parsed, models.ErrorEnvelope), again.parsed
    assert again.parsed.error.code == "handle_taken"

    print(f"generated client: registered {handle}, posted {call.id}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
