"""``autocomp-core serve``: the live dashboard, as a subprocess on loopback.

Access rules (token off loopback, 401 without it, foreign Host refused), the API, that
it never writes to a run, and, in headless Chromium, that its page follows a run that
is going on (against the LLM test server) until it ends."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import tomli_w
from playwright.sync_api import expect
from report_helpers import snapshot, toy_run_config

from autocomp_core.ledger.store import RunStore
from autocomp_core.testing.preloaded_cli import preloaded_cli

CLI = preloaded_cli()
TOKEN = "s3cret-token"


@contextlib.contextmanager
def serving(root: Path, *args: str, env: dict | None = None, before: list | None = None):
    """``autocomp-core serve`` in a subprocess; yields its base URL. The lines it prints
    before the address (warnings) go into ``before``."""
    proc = subprocess.Popen(
        [*CLI, "serve", str(root), "--port", "0", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        seen, match = [], None
        for line in proc.stderr:
            match = re.search(r"at (http://\S+/)", line)
            if match:
                break
            seen.append(line)
        assert match, "".join(seen) + proc.stderr.read()
        if before is not None:
            before += seen
        yield match.group(1)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def get(url: str, headers: dict | None = None) -> tuple[int, dict, bytes]:
    """A GET that follows no redirect and raises on no status."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kw):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(urllib.request.Request(url, headers=headers or {}), timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def env_without_token() -> dict:
    return {k: v for k, v in os.environ.items() if k != "AUTOCOMP_SERVE_TOKEN"}


@pytest.mark.parametrize("host", ["127.0.0.2", "0.0.0.0"])
def test_an_address_off_127_0_0_1_needs_a_token(suite_dir, host):
    out = subprocess.run(
        [*CLI, "serve", str(suite_dir), "--host", host, "--port", "0"],
        capture_output=True,
        text=True,
        env=env_without_token(),
        timeout=60,
        check=False,
    )
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs a token" in lines[0] and host in lines[0]


def test_missing_directory_fails_in_one_line(tmp_path):
    out = subprocess.run(
        [*CLI, "serve", str(tmp_path / "nope")], capture_output=True, text=True, check=False
    )
    assert out.returncode == 2 and out.stderr.startswith("error: serve:")


@pytest.mark.parametrize("via", ["flag", "env", "file"])
def test_every_request_needs_the_token(suite_dir, via, tmp_path):
    env = env_without_token()
    args = ["--host", "127.0.0.2"]
    if via == "env":
        env["AUTOCOMP_SERVE_TOKEN"] = TOKEN
    elif via == "file":
        token_file = tmp_path / "token"
        token_file.write_text(TOKEN + "\n")
        token_file.chmod(0o600)
        args += ["--token-file", str(token_file)]
    else:
        args += ["--token", TOKEN]
    warnings: list[str] = []
    with serving(suite_dir, *args, env=env, before=warnings) as base:
        # only the flag puts the token where every user sees it (ps): it alone warns
        if via == "flag":
            assert len(warnings) == 1 and warnings[0].startswith("warning: --token is visible")
            assert "AUTOCOMP_SERVE_TOKEN" in warnings[0] and "--token-file" in warnings[0]
        else:
            assert warnings == []
        assert base.startswith("http://127.0.0.2:")
        for path in ("", "api/runs", "api/runs/sum_squares", "api/events"):
            assert get(base + path)[0] == 401, path
            assert get(base + path, {"Authorization": "Bearer wrong"})[0] == 401, path
        status, _, body = get(base + "api/runs", {"Authorization": f"Bearer {TOKEN}"})
        assert status == 200 and len(json.loads(body)) == 3
        # a browser passes it once in the address and keeps it in a cookie
        status, headers, _ = get(base + f"?token={TOKEN}")
        assert status == 302 and headers["Location"] == "/"
        cookie = headers["Set-Cookie"].split(";")[0]
        assert "HttpOnly" in headers["Set-Cookie"]
        assert get(base + "api/runs", {"Cookie": cookie})[0] == 200


def test_token_file_checks(suite_dir, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o644)
    warnings: list[str] = []
    with serving(
        suite_dir, "--token-file", str(token_file), env=env_without_token(), before=warnings
    ) as base:
        assert get(base + "api/runs", {"Authorization": f"Bearer {TOKEN}"})[0] == 200
    assert len(warnings) == 1 and "can be read by other users (mode 644)" in warnings[0]
    for content, env_token, message in [
        ("\n", None, "its first line is empty"),
        (TOKEN, TOKEN, "--token-file and --token (or AUTOCOMP_SERVE_TOKEN): give one"),
    ]:
        token_file.write_text(content)
        env = env_without_token()
        if env_token:
            env["AUTOCOMP_SERVE_TOKEN"] = env_token
        out = subprocess.run(
            [*CLI, "serve", str(suite_dir), "--port", "0", "--token-file", str(token_file)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        assert out.returncode == 2 and message in out.stderr, out.stderr
        assert len(out.stderr.strip().splitlines()) == 1


def test_the_readme_says_how_to_serve_beyond_a_trusted_network():
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    serve = readme[readme.index("`serve` lists the runs") :]
    serve = serve[: serve.index("![The dashboard")]
    assert "AUTOCOMP_SERVE_TOKEN" in serve and "--token-file" in serve
    assert "process list" in serve
    assert "reverse" in serve and "proxy that terminates TLS" in serve


def test_api_serves_runs_and_never_writes_to_them(suite_dir, tmp_path):
    root = tmp_path / "runs"
    shutil.copytree(suite_dir, root)
    before = snapshot(root)
    with serving(root) as base:
        status, _, body = get(base + "api/runs")
        rows = json.loads(body)
        assert status == 200 and [r["name"] for r in rows] == [
            "count_pairs",
            "prefix_max",
            "sum_squares",
        ]
        assert all(r["state"] == "completed" for r in rows)
        status, headers, body = get(base + "api/runs/sum_squares", {"Accept-Encoding": "gzip"})
        assert status == 200 and headers["Content-Encoding"] == "gzip"
        data = json.loads(gzip.decompress(body))
        assert (
            data["summary"]["speedup"]
            == json.loads((root / "sum_squares" / "summary.json").read_text())["speedup"]
        )
        assert get(base + "api/runs/sum_squares", {"If-None-Match": headers["ETag"]})[0] == 304
        assert get(base + "api/runs/nope")[0] == 404
        assert get(base + "api/runs/..%2F..%2Fetc")[0] == 404
        assert get(base + "api/runs", {"Host": "attacker.example"})[0] == 403
        page = get(base)[2].decode()
        assert "connect-src 'self'" in page and 'id="autocomp-source"' in page
    assert snapshot(root) == before


def test_dashboard_follows_a_live_run(tmp_path, slow_server, open_page, screenshots):
    root = tmp_path / "runs"
    root.mkdir()
    config = tmp_path / "live.toml"
    config.write_text(
        tomli_w.dumps(
            toy_run_config(
                slow_server, root / "live", iterations=3, plans_per_candidate=3, codes_per_plan=2
            )
        )
    )
    with serving(root) as base:
        view = open_page(base)
        page = view.page
        assert page.locator("#runs tbody tr").count() == 0
        nodes = page.locator("#tree .node")
        slow_server.pause()  # the run goes step by step, as the test lets it
        run = subprocess.Popen(
            [*CLI, "optimize", str(config), "--quiet"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            page.wait_for_selector('#runs tr[data-run="live"]', timeout=60_000)
            page.screenshot(path=str(screenshots / "dashboard-runs.png"), full_page=True)
            page.click('#runs tr[data-run="live"]')
            page.wait_for_selector("#tree .node")
            seen = [nodes.count()]  # tree sizes while the run was going
            for _ in range(2):  # let it run until the page shows it grew, then hold it
                before = seen[-1]
                slow_server.resume()
                deadline = time.monotonic() + 60
                while seen[-1] == before:
                    assert run.poll() is None and time.monotonic() < deadline, seen
                    time.sleep(0.1)
                    seen.append(nodes.count())
                slow_server.pause()
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(path=str(screenshots / "dashboard-run.png"), full_page=True)
            slow_server.resume()
            while run.poll() is None:
                seen.append(nodes.count())
                time.sleep(0.25)
            assert run.returncode == 0, run.stderr.read()
        finally:
            slow_server.resume()
            if run.poll() is None:
                run.kill()
        growth = sorted(set(seen))
        assert len(growth) >= 3 and seen == sorted(seen), seen  # it grew, step by step
        store = RunStore(root / "live")
        total = store.count("candidates")
        store.close()
        # (not wait_for_function: the page's CSP forbids evaluating strings)
        expect(page.locator("#tree .node")).to_have_count(total, timeout=30_000)
        page.wait_for_selector("#run-head .badge.completed", timeout=30_000)
        assert seen[0] < total
    origin = base.rstrip("/")
    assert all(url.startswith(origin + "/") for url in view.requests), view.requests
    assert view.errors == []
