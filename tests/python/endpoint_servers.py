"""Real endpoints on a loopback port for the liveness-check tests (tests/endpoints.rs).

    python3 endpoint_servers.py KIND [HANDLE]

KIND is one of:
  a2a       an A2A agent card built with the A2A SDK's own types and served by its card route
            (/.well-known/agent-card.json), as an a2a-sdk server publishes it
  a2a-bad   the same route serving a card that lacks required fields (skills, supportedInterfaces)
  mcp       an MCP server of the `mcp` SDK (MCPServer) over streamable HTTP at /mcp, two tools
  mcp-legacy  the same MCP server as it answers a client when it predates revision 2026-07-28:
            a request of that revision has no session and is refused (400) the way the SDK's
            stateful transport refuses one, so a client must fall back to `initialize`; the SDK's
            own transport serves everything else (SSE answers, Mcp-Session-Id)
  mcp-lingering  mcp-legacy whose SSE answers stay open for 30 s after their last event (the
            MCP spec only says a server SHOULD close the stream once it has answered)
  mcp-slash  the MCP server at /mcp/, so /mcp answers 307 -> /mcp/ (Starlette's slash redirect,
            as FastMCP 1.9 of the MCP Python SDK answers at its documented /mcp)
  mcp-elsewhere  an MCP server whose /mcp answers 307 to the same path on another origin
            (localhost instead of 127.0.0.1: same port, another host)
  mcp-auth  an HTTP server answering 401 with an OAuth Bearer challenge at /mcp
  mcp-tides  an MCP server whose one tool only it describes (tide heights for a harbour), with
            a page /about that holds `agentdir-proof:HANDLE` (a link proof on the endpoint's
            origin); its own answer holds no proof
  mcp-tides-proven  the same server whose instructions hold `agentdir-proof:HANDLE`
  mcp-tides-well-known  the same server whose origin publishes `agentdir-proof:HANDLE` at
            /.well-known/agentdir-proof
  mcp-tides-redirected  the same server whose /.well-known/agentdir-proof answers 302 -> /about
            (a site that sends unknown paths to a page its users write on)
  a2a-elsewhere  the a2a card (with HANDLE's proof) at localhost only: asked at 127.0.0.1, the
            card's path answers 302 to the same path at localhost (another origin), as an open
            redirect of someone else's site would

With HANDLE, the A2A card's description carries `agentdir-proof:HANDLE`, so the card's URL
doubles as a link proof of that agent on the endpoint's origin (the endpoint is then owned).

Prints `listening on PORT` once the socket accepts connections, then serves until killed.
"""

import socket
import sys

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse, RedirectResponse
from starlette.routing import Route


def a2a_app(valid: bool, proof_of: str | None) -> Starlette:
    from a2a.server.routes.agent_card_routes import create_agent_card_routes
    from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill

    card = AgentCard(
        name="Echo Agent",
        description="Repeats what it is told." + (f" agentdir-proof:{proof_of}" if proof_of else ""),
        version="1.4.0",
        supported_interfaces=[
            AgentInterface(url="http://127.0.0.1/a2a", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(id="echo", name="Echo", description="Echoes text.", tags=["echo"]),
            AgentSkill(id="shout", name="Shout", description="Echoes text loudly.", tags=["echo"]),
        ],
    )
    if valid:
        return Starlette(routes=create_agent_card_routes(card))

    async def bad_card(_request):
        return JSONResponse({"name": "Broken Agent", "description": "A card without skills.", "version": "1"})

    return Starlette(routes=[Route("/.well-known/agent-card.json", bad_card)])


def mcp_app(path: str = "/mcp") -> Starlette:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("Loopback Tools")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Adds two numbers."""
        return a + b

    @server.tool()
    def echo(text: str) -> str:
        """Echoes text."""
        return text

    return server.streamable_http_app(streamable_http_path=path)


class Elsewhere:
    """Sends every request to /mcp on to the same path at localhost (another origin)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"] == "/mcp":
            port = scope["server"][1]
            response = RedirectResponse(f"http://localhost:{port}/mcp", status_code=307)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


class CardElsewhere:
    """Sends a request for the card that is not addressed to localhost on to localhost."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        host = dict(scope.get("headers") or []).get(b"host", b"").decode()
        if scope["type"] == "http" and not host.startswith("localhost"):
            port = scope["server"][1]
            response = RedirectResponse(f"http://localhost:{port}{scope['path']}", status_code=302)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def tides_app(proof_of: str | None, where: str) -> Starlette:
    """An MCP server with one tool nobody else describes; `where` says where the proof stands:
    `page` (a page of the origin, not the endpoint's answer), `answer` (its instructions),
    `well-known` (the origin's /.well-known/agentdir-proof) or `well-known-redirected` (the
    page, which the well-known path redirects to)."""
    from mcp.server.mcpserver import MCPServer
    from starlette.responses import PlainTextResponse
    from starlette.routing import Mount

    proof = f"agentdir-proof:{proof_of}" if proof_of else ""
    instructions = "Ask for the tide at a harbour." + (f" {proof}" if where == "answer" else "")
    server = MCPServer("Harbour Tools", instructions=instructions)

    @server.tool()
    def tide_table(harbour: str, date: str) -> str:
        """Predicts high and low tide heights for a harbour on any date."""
        return f"{harbour} {date}: high water 4.2 m"

    async def page(_request):
        return PlainTextResponse(f"About us. {proof}")

    mcp = server.streamable_http_app()
    routes = [Route("/about", page)]
    if where == "well-known":
        routes.append(Route("/.well-known/agentdir-proof", page))
    if where == "well-known-redirected":

        async def to_page(_request):
            return RedirectResponse("/about", status_code=302)

        routes.append(Route("/.well-known/agentdir-proof", to_page))
    routes.append(Mount("/", app=mcp))
    return Starlette(routes=routes, lifespan=mcp.router.lifespan_context)


class PredatesDiscover:
    """Serves the MCP app only to clients of the initialize-era revisions."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        headers = dict(scope.get("headers") or [])
        if scope["type"] == "http" and headers.get(b"mcp-protocol-version") == b"2026-07-28":
            response = JSONResponse(
                {"jsonrpc": "2.0", "id": "server-error", "error": {"code": -32600, "message": "Bad Request: Missing session ID"}},
                status_code=400,
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


class Lingering:
    """Keeps every SSE answer of the wrapped app open for 30 s after its last event."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sse = False

        async def linger(message):
            nonlocal sse
            if message["type"] == "http.response.start":
                sse = any(
                    k.lower() == b"content-type" and v.startswith(b"text/event-stream")
                    for k, v in message.get("headers", [])
                )
            if sse and message["type"] == "http.response.body" and not message.get("more_body", False):
                await send({**message, "more_body": True})
                await send({"type": "http.response.body", "body": b": still here\n\n", "more_body": True})
                await anyio.sleep(30)
            await send(message)

        await self.app(scope, receive, linger)


def auth_app() -> Starlette:
    async def challenge(_request):
        return JSONResponse(
            {"error": "invalid_token"},
            status_code=401,
            headers={
                "WWW-Authenticate": 'Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"'
            },
        )

    return Starlette(routes=[Route("/mcp", challenge, methods=["GET", "POST"])])


def main() -> None:
    kind = sys.argv[1]
    proof_of = sys.argv[2] if len(sys.argv) > 2 else None
    app = {
        "a2a": lambda: a2a_app(True, proof_of),
        "a2a-bad": lambda: a2a_app(False, proof_of),
        "mcp": mcp_app,
        "mcp-slash": lambda: mcp_app("/mcp/"),
        "mcp-elsewhere": lambda: Elsewhere(mcp_app()),
        "mcp-legacy": lambda: PredatesDiscover(mcp_app()),
        "mcp-lingering": lambda: PredatesDiscover(Lingering(mcp_app())),
        "mcp-auth": auth_app,
        "mcp-tides": lambda: tides_app(proof_of, "page"),
        "mcp-tides-proven": lambda: tides_app(proof_of, "answer"),
        "mcp-tides-well-known": lambda: tides_app(proof_of, "well-known"),
        "mcp-tides-redirected": lambda: tides_app(proof_of, "well-known-redirected"),
        "a2a-elsewhere": lambda: CardElsewhere(a2a_app(True, proof_of)),
    }[kind]()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(f"listening on {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
