"""``autocomp-core mcp``: serve the tools over stdio (what MCP clients start), or over
streamable HTTP on 127.0.0.1 with a bearer token. Registered with the command line by name,
so the SDK is imported only when this command runs."""

from __future__ import annotations

import os
from pathlib import Path

import click

from ..cli.common import loaded_plugins
from ..errors import AutocompError, ConfigError

#: where ``--http`` reads its bearer token when no ``--token-file`` is given
TOKEN_ENV = "AUTOCOMP_MCP_TOKEN"
#: where ``--http`` listens by default (the dashboard's port, 8750, plus one)
PORT = 8751


@click.command()
@click.option("--http", "over_http", is_flag=True, help="Streamable HTTP instead of stdio.")
@click.option("--port", type=int, help=f"With --http (default {PORT}).")
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help=f"With --http: the bearer token, first line (chmod 600); default: env {TOKEN_ENV}.",
)
def mcp(over_http: bool, port: int | None, token_file: Path | None) -> None:
    """MCP server: coding agents list backends, evaluate programs, and start, follow,
    stop and resume runs (see docs/mcp.md). Runs it starts go on after it exits."""
    if not over_http:
        for flag, value in (("--port", port), ("--token-file", token_file)):
            if value is not None:
                raise ConfigError(f"{flag}: only with --http")
    token = read_token(token_file) if over_http else ""
    try:
        from .server import build_server
    except ImportError as exc:
        if (exc.name or "").partition(".")[0] != "mcp":
            raise
        raise AutocompError(
            "the MCP server needs the MCP SDK: pip install 'autocomp-core[mcp]'"
        ) from None

    server = build_server(loaded_plugins())
    if not over_http:
        server.run("stdio")
        return
    from .http_transport import serve_http

    serve_http(server, PORT if port is None else port, token)


def read_token(token_file: Path | None) -> str:
    """The bearer token: the file's first line (a file others can read is refused), else
    the environment's."""
    if token_file is None:
        token = os.environ.get(TOKEN_ENV, "").strip()
        if not token:
            raise ConfigError(f"--http: needs a token (env {TOKEN_ENV} or --token-file)")
        return token
    try:
        if token_file.stat().st_mode & 0o077:
            raise ConfigError(f"--token-file {token_file}: others can read it (chmod 600)")
        token = token_file.read_text().partition("\n")[0].strip()
    except OSError as exc:
        raise ConfigError(f"--token-file {token_file}: {exc.strerror}") from None
    if not token:
        raise ConfigError(f"--token-file {token_file}: empty")
    return token
