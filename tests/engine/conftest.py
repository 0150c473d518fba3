"""Engine test fixtures: the LLM protocol test server scripted for the toy backend.

Helpers the tests import live in ``engine_helpers`` (a module of its own: a test that
imported ``conftest`` by name would get whichever ``conftest`` came first on the path)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import pytest_asyncio

sys.path.insert(0, str(Path(__file__).parent))

from scripted_llm import reply

from autocomp_core.testing.llm_server import LLMTestServer


@pytest_asyncio.fixture
async def llm_server():
    async with LLMTestServer(lambda req: reply(req.prompt)) as server:
        yield server


@pytest.fixture
def thread_server():
    """A server on its own thread, for runs in subprocesses or in anyio.run."""
    server = LLMTestServer(lambda req: reply(req.prompt)).start_in_thread()
    yield server
    server.stop_thread()
