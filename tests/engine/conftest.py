"""Engine test fixtures: the LLM protocol test server scripted for the toy backend."""
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


def toy_config(server, tmp_path: Path, **search) -> dict:
    """A small toy run talking to the scripted server."""
    model = f"openai-compatible@{server.openai_base_url}::scripted"
    return {
        "backend": "toy", "problem": "sum_squares", "seed": 7,
        "run_dir": str(tmp_path / "run"),
        "models": {"plan": [model]},
        "search": {"iterations": 2, "beam_size": 2, "plans_per_candidate": 3,
                   "codes_per_plan": 2, **search},
        "llm": {"max_retries": 2, "timeout_s": 30},
    }
