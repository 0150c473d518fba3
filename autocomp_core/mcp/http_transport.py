"""The server over streamable HTTP: on 127.0.0.1 only, every request carrying the bearer
token (``Authorization: Bearer TOKEN``; without it, 401)."""

from __future__ import annotations

import hmac
import sys
from typing import Any

import anyio
import uvicorn
from mcp.server import MCPServer

HOST = "127.0.0.1"


class BearerToken:
    """ASGI middleware: an HTTP request without the token gets 401 and reaches nothing."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"text/plain"),
                            (b"www-authenticate", b"Bearer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": b"a bearer token is required\n"})
                return
        await self.app(scope, receive, send)


def serve_http(server: MCPServer, port: int, token: str) -> None:
    app = BearerToken(server.streamable_http_app(host=HOST), token)
    print(f"MCP server on http://{HOST}:{port}/mcp (bearer token required)", file=sys.stderr)
    config = uvicorn.Config(app, host=HOST, port=port, log_level="warning")
    anyio.run(uvicorn.Server(config).serve)
