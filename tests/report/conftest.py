"""Report and dashboard fixtures: real toy runs against the scripted LLM test server,
and one headless Chromium (Debian's) per test module."""

from __future__ import annotations

import os
import random
import shutil
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE.parent / "engine"):  # report_helpers, scripted_llm
    if str(folder) not in sys.path:
        sys.path.append(str(folder))

from report_helpers import toy_run_config  # noqa: E402
from scripted_llm import reply  # noqa: E402

from autocomp_core.api import optimize  # noqa: E402
from autocomp_core.testing.llm_server import LLMTestServer  # noqa: E402

#: flags that keep Chromium quiet and local on a headless machine
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: where screenshots go when refreshing docs/ (otherwise a temporary folder)
SCREENSHOTS_ENV = "AUTOCOMP_SCREENSHOTS"


def scripted(low_s: float, high_s: float, seed: int) -> LLMTestServer:
    """The scripted LLM on its own thread, answering after a latency in [low_s, high_s]."""
    rng = random.Random(seed)
    return LLMTestServer(
        lambda req: reply(req.prompt), latency=lambda req: rng.uniform(low_s, high_s)
    ).start_in_thread()


@pytest.fixture(scope="session")
def scripted_server():
    server = scripted(0.01, 0.04, seed=3)
    yield server
    server.stop_thread()


@pytest.fixture
def slow_server():
    """Slow enough that a run lasts while a test watches it: several of the dashboard's
    rebuild periods (``REBUILD_S``), even on an idle machine."""
    server = scripted(0.5, 1.0, seed=11)
    yield server
    server.stop_thread()


@pytest.fixture(scope="session")
def suite_dir(tmp_path_factory, scripted_server) -> Path:
    """A folder of three finished runs, one per toy problem, as a suite lays them out."""
    root = tmp_path_factory.mktemp("suite")
    optimize(toy_run_config(scripted_server, root / "sum_squares"), progress=False)
    for problem in ("prefix_max", "count_pairs"):
        optimize(
            toy_run_config(
                scripted_server,
                root / problem,
                problem,
                iterations=1,
                plans_per_candidate=2,
                codes_per_plan=1,
            ),
            progress=False,
        )
    return root


@pytest.fixture
def run_copy(suite_dir, tmp_path) -> Path:
    """A test-owned copy of the sum_squares run, free to alter."""
    target = tmp_path / "run"
    shutil.copytree(suite_dir / "sum_squares", target)
    return target


def chromium_path() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError("chromium is not installed (scripts/setup.sh installs Debian's)")


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """One browser per test module, with a fresh profile."""
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile),
            executable_path=chromium_path(),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 900},
        )
        yield context
        context.close()


@pytest.fixture
def screenshots(tmp_path) -> Path:
    folder = Path(os.environ.get(SCREENSHOTS_ENV) or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class WatchedPage:
    """A page with everything it logged as an error and every request it made."""

    def __init__(self, page) -> None:
        self.page = page
        self.errors: list[str] = []
        self.requests: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.on("request", lambda r: self.requests.append(r.url))

    def open(self, url: str) -> WatchedPage:
        self.page.goto(url)
        self.page.wait_for_selector("body[data-rendered]", timeout=20_000)
        return self


@pytest.fixture
def open_page(browser):
    pages = []

    def opener(url: str) -> WatchedPage:
        watched = WatchedPage(browser.new_page())
        pages.append(watched.page)
        return watched.open(url)

    yield opener
    for page in pages:
        page.close()
