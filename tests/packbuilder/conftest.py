"""Knowledge-builder test fixtures: the scripted LLM server, the documentation site served
on 127.0.0.1 (with a second server standing for another site)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

# appended, not prepended: other test folders import their own `conftest` by name
sys.path.append(str(Path(__file__).parent))

from pack_helpers import BIG_PAGE_BYTES, DOCS, Site
from pack_llm import reply

from autocomp_core.testing.llm_server import LLMTestServer


@pytest.fixture(scope="module")
def sites(tmp_path_factory):
    """(the documentation site, another site it links to)."""
    other_root = tmp_path_factory.mktemp("other-site")
    (other_root / "spec.html").write_text("<html><body><h1>Not ours</h1></body></html>")
    other = Site(other_root)
    root = tmp_path_factory.mktemp("site")
    shutil.copytree(DOCS / "site", root, dirs_exist_ok=True)
    for page in root.glob("*.html"):
        page.write_text(page.read_text().replace("OFFSITE_URL", other.url))
    (root / "big.html").write_text(
        "<html><body><h1>Trace</h1><p>" + "x" * BIG_PAGE_BYTES + "</p></body></html>"
    )
    site = Site(root, redirects={"/moved.html": f"{other.url}/spec.html"})
    yield site, other
    site.close()
    other.close()


@pytest.fixture(scope="module")
def pack_server():
    server = LLMTestServer(lambda req: reply(req.prompt)).start_in_thread()
    yield server
    server.stop_thread()
