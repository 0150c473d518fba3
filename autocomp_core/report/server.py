"""The live dashboard: ``autocomp-core serve [RUNS_DIR]``.

An aiohttp server that lists the runs in a directory and shows each with the report's
page, updated while the runs go on. It reads each run's journal through a read-only
connection (WAL lets readers run beside the writer) and never writes to a run.

How updates flow: every ``POLL_S`` the server looks at the journal files' sizes and
times (a few ``stat`` calls, nothing read); when a run changed, it tells every open page
over server-sent events, and each page fetches the run again. A run's data is rebuilt
at most once per ``REBUILD_S`` however many pages ask (one lock per run, one cached,
compressed answer; a change that arrived meanwhile is announced again once it can be
served), so many viewers cost the run being watched almost nothing.

Access: it binds 127.0.0.1 by default. Any other address needs a token
(``AUTOCOMP_SERVE_TOKEN``, ``--token-file``, or ``--token``, which warns: a command line is
visible to every user in the process list); a request without it gets 401. A browser
passes it once as ``?token=...`` and keeps it in a cookie. The server speaks plain HTTP:
beyond a trusted network, keep it on 127.0.0.1 with a token behind a reverse proxy that
terminates TLS (README, "serve").
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import hmac
import json
import math
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from anyio.streams.memory import MemoryObjectSendStream

from ..errors import ConfigError
from ..ledger.store import DB_NAME
from .data import find_runs, is_run, run_data, run_row
from .page import CSP_LIVE, render_page

POLL_S = 1.0  # how often journals are looked at for changes
REBUILD_S = 2.0  # a run's data is rebuilt at most this often
WATCHED_S = 60.0  # a run asked for within this long is kept fresh for its viewers
RESCAN_S = 2.0  # how often the directory is searched for new runs
HEARTBEAT_S = 15.0  # keeps idle event streams (and proxies) alive
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
TOKEN_COOKIE = "autocomp_token"
TOKEN_ENV = "AUTOCOMP_SERVE_TOKEN"


class ServeError(ConfigError):
    """Bad input to ``serve``: one line naming what is wrong."""


class Unreadable(Exception):
    """A run whose journal cannot be read (yet)."""


def journal_signature(run_dir: Path) -> tuple:
    """Changes whenever the run commits anything (the log grows or is rewritten)."""
    sig: list[tuple[int, int] | None] = []
    for name in (DB_NAME, DB_NAME + "-wal"):
        try:
            st = (run_dir / name).stat()
            sig.append((st.st_mtime_ns, st.st_size))
        except FileNotFoundError:
            sig.append(None)
    return tuple(sig)


@dataclass
class WatchedRun:
    name: str
    path: Path
    signature: tuple = ()  # as last seen by the watcher
    built_signature: tuple | None = None  # of the data in ``body``
    built_at: float = -math.inf
    requested_at: float = -math.inf
    body: bytes = b""  # gzip-compressed JSON of the run's data
    etag: str = ""
    row: dict[str, Any] = field(default_factory=dict)
    lock: anyio.Lock = field(default_factory=anyio.Lock)


class Dashboard:
    """The runs below one directory, each rebuilt on demand after it changed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.runs: dict[str, WatchedRun] = {}
        self.subscribers: set[MemoryObjectSendStream[str | None]] = set()  # open pages
        self._last_scan = 0.0
        self.scan()

    def scan(self) -> list[str]:
        """Find runs (new ones appear while serving); returns the new names."""
        self._last_scan = time.monotonic()
        if is_run(self.root):
            found = {self.root.name: self.root}
        else:
            found = {p.relative_to(self.root).as_posix(): p for p in find_runs(self.root)}
        new = [name for name in found if name not in self.runs]
        for name in new:
            self.runs[name] = WatchedRun(name, found[name], journal_signature(found[name]))
        return new

    def changed_runs(self) -> list[str]:
        """Runs whose journal changed since the last look, and runs whose viewers still
        wait for a change the rebuild limit held back."""
        now = time.monotonic()
        changed = self.scan() if now - self._last_scan >= RESCAN_S else []
        for run in self.runs.values():
            sig = journal_signature(run.path)
            if sig != run.signature:
                run.signature = sig
                changed.append(run.name)
            elif (
                run.built_signature not in (None, sig)
                and now - run.built_at >= REBUILD_S
                and now - run.requested_at < WATCHED_S
            ):
                changed.append(run.name)
        return sorted(set(changed))

    async def fresh(self, run: WatchedRun) -> WatchedRun:
        """The run's data, rebuilt if its journal changed and the last build is older
        than ``REBUILD_S``."""
        async with run.lock:
            now = run.requested_at = time.monotonic()
            signature = journal_signature(run.path)
            if run.built_signature is None or (
                signature != run.built_signature and now - run.built_at >= REBUILD_S
            ):
                try:
                    data = await anyio.to_thread.run_sync(run_data, run.path, run.name)
                except (sqlite3.Error, OSError) as exc:  # e.g. a journal being created
                    if run.built_signature is None:
                        raise Unreadable(f"{run.name}: {exc}") from None
                    return run  # keep showing what was last read
                raw = json.dumps(data, separators=(",", ":"), allow_nan=False).encode()
                run.body = await anyio.to_thread.run_sync(gzip.compress, raw, 6)
                run.etag = '"' + hashlib.sha256(run.body).hexdigest()[:20] + '"'
                run.row = run_row(data)
                run.built_signature, run.built_at = signature, time.monotonic()
        return run

    def broadcast(self, changed: list[str]) -> None:
        """Tell every open page which runs changed."""
        message = json.dumps({"changed": changed, "at": time.time()})
        for stream in self.subscribers:
            stream.send_nowait(message)  # (unbounded: never blocks)

    async def watch(self) -> None:
        """Look for changes until cancelled."""
        while True:
            await anyio.sleep(POLL_S)
            changed = self.changed_runs()  # a few stat calls: no need for a thread
            if changed:
                self.broadcast(changed)


# -- HTTP ------------------------------------------------------------------------------
DASHBOARD = web.AppKey("dashboard", Dashboard)
PAGE = web.AppKey("page", bytes)


def make_app(dashboard: Dashboard, token: str | None = None) -> web.Application:
    app = web.Application(middlewares=[_guard(token)])
    app[DASHBOARD] = dashboard
    app[PAGE] = render_page(f"autocomp: {dashboard.root.resolve().name}").encode()
    app.router.add_get("/", _index)
    app.router.add_get("/api/runs", _runs)
    app.router.add_get("/api/runs/{name:.+}", _one_run)
    app.router.add_get("/api/events", _events)
    app.on_shutdown.append(_close_streams)
    return app


def _guard(token: str | None) -> Middleware:
    """The middleware every request passes: the access rules, then headers on every answer."""

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        refused = _refusal(request, token)
        if refused is not None:
            return refused
        response = await handler(request)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        return response

    return guard


def _refusal(request: web.Request, token: str | None) -> web.Response | None:
    """The answer to a request that may not pass (None: it may): without a token, one
    naming a host other than loopback; with one, one that lacks it, and one that carries it
    in the address (sent back without it, the token set as a cookie)."""
    if token is None:
        if not _loopback_host_header(request.host):
            # a page elsewhere that rebinds its name to 127.0.0.1 must not read the runs
            return web.Response(status=403, text="forbidden host\n")
        return None
    given = (
        request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        or request.cookies.get(TOKEN_COOKIE)
        or request.query.get("token")
        or ""
    )
    if not hmac.compare_digest(given.encode(), token.encode()):
        return web.Response(
            status=401, text="a token is required\n", headers={"WWW-Authenticate": "Bearer"}
        )
    if "token" in request.query:  # keep it in a cookie, and out of the address bar
        query = {k: v for k, v in request.query.items() if k != "token"}
        target = str(request.rel_url.with_query(query))
        response = web.Response(status=302, headers={"Location": target})
        response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="Strict")
        return response
    return None


async def _index(request: web.Request) -> web.Response:
    return web.Response(
        body=request.app[PAGE],
        content_type="text/html",
        charset="utf-8",
        headers={"Content-Security-Policy": CSP_LIVE, "Cache-Control": "no-store"},
    )


async def _runs(request: web.Request) -> web.Response:
    dashboard = request.app[DASHBOARD]
    rows = []
    for _, run in sorted(dashboard.runs.items()):
        with contextlib.suppress(Unreadable):  # listed once it can be read
            rows.append((await dashboard.fresh(run)).row)
    return web.json_response(rows, headers={"Cache-Control": "no-store"})


async def _one_run(request: web.Request) -> web.Response:
    dashboard = request.app[DASHBOARD]
    run = dashboard.runs.get(request.match_info["name"])
    if run is None:
        raise web.HTTPNotFound(text="no such run\n")
    try:
        run = await dashboard.fresh(run)
    except Unreadable as exc:
        raise web.HTTPServiceUnavailable(text=f"cannot read the run yet: {exc}\n") from None
    headers = {"ETag": run.etag, "Cache-Control": "no-cache", "Vary": "Accept-Encoding"}
    if request.headers.get("If-None-Match") == run.etag:
        return web.Response(status=304, headers=headers)
    if "gzip" in request.headers.get("Accept-Encoding", ""):
        headers["Content-Encoding"] = "gzip"
        body = run.body
    else:
        body = gzip.decompress(run.body)
    return web.Response(body=body, content_type="application/json", headers=headers)


async def _events(request: web.Request) -> web.StreamResponse:
    """Server-sent events: which runs changed, a keep-alive when idle, until the page goes
    or the server shuts down."""
    dashboard = request.app[DASHBOARD]
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"}
    )
    await response.prepare(request)
    send, receive = anyio.create_memory_object_stream[str | None](math.inf)
    dashboard.subscribers.add(send)
    try:
        await response.write(b"retry: 2000\n\n")
        while True:
            with anyio.move_on_after(HEARTBEAT_S) as idle:
                message = await receive.receive()
            if idle.cancelled_caught:
                await response.write(b": keep-alive\n\n")
                continue
            if message is None:  # the server is shutting down
                break
            await response.write(f"event: update\ndata: {message}\n\n".encode())
    except ConnectionResetError:  # the page went away
        pass
    finally:
        dashboard.subscribers.discard(send)
        send.close()
        receive.close()
    return response


async def _close_streams(app: web.Application) -> None:
    for stream in app[DASHBOARD].subscribers:
        stream.send_nowait(None)


def _loopback_host_header(host: str) -> bool:
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    return name.strip("[]") in LOOPBACK_HOSTS


def read_token_file(path: Path) -> tuple[str, str | None]:
    """The token in ``path`` (its first line) and a warning when others may read the file."""
    try:
        text = path.read_text(encoding="utf-8")
        mode = path.stat().st_mode
    except (OSError, UnicodeDecodeError) as exc:
        raise ServeError(f"serve --token-file {path}: cannot read it ({exc})") from None
    token = (text.splitlines() or [""])[0].strip()
    if not token:
        raise ServeError(f"serve --token-file {path}: its first line is empty")
    warning = None
    if mode & 0o077:
        warning = (
            f"--token-file {path} can be read by other users (mode {mode & 0o777:o}): "
            f"chmod 600 {path}"
        )
    return token, warning


def check_binding(host: str, token: str | None) -> None:
    if host not in LOOPBACK_HOSTS and not token:
        raise ServeError(
            f"serve --host {host}: binding an address other than 127.0.0.1 needs "
            f"a token ({TOKEN_ENV} or --token-file); anyone who reaches it could read "
            "your runs"
        )


async def serve(
    root: Path,
    host: str = "127.0.0.1",
    port: int = 8750,
    token: str | None = None,
    ready: Any = print,
) -> None:
    """Serve until cancelled; ``ready`` is told the address once the port is bound."""
    if not root.is_dir():
        raise ServeError(f"serve: {root} is not a directory")
    check_binding(host, token)
    dashboard = Dashboard(root)
    runner = web.AppRunner(
        make_app(dashboard, token), access_log=None, handle_signals=False, shutdown_timeout=2.0
    )
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound_host, bound_port = runner.addresses[0][:2]
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        ready(
            f"serving the runs in {root} at http://{shown}:{bound_port}/"
            + ("  (pass ?token=... once)" if token else "")
        )
        await dashboard.watch()
    finally:
        with anyio.CancelScope(shield=True):  # close the open pages' streams even when cancelled
            await runner.cleanup()
