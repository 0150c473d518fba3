"""The embedded local model: llama.cpp's OpenAI-compatible server on 127.0.0.1.

Started as a child process (that exits when its parent dies) on a free port, polled until
``/v1/models`` answers, and stopped (terminate, then kill) when the client closes,
also on cancellation.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import aiohttp
import anyio
import structlog

from .errors import LLMConfigError

log = structlog.get_logger("autocomp.llm")


# llama-cpp-python's server defaults that cost time on the engine's long prompts (flash
# attention was measured too: 5% faster prompts, 27% slower generation on this model):
TUNING = (
    # logits for every prompt token (the default) are for logprobs, which the engine never
    # asks for; computing and copying them costs prompt time and n_ctx x vocabulary floats
    "--logits_all",
    "false",
    # a prompt evaluated 64 tokens per step instead of 512: the same CPU seconds, and on a busy
    # machine about half the wall time (SmolLM2-135M, a 1,614-token prompt on 2 cores at load
    # 7-11: 20 s instead of 45, medians of 6). Its threads then sleep at a barrier every few
    # milliseconds, and the scheduler runs a thread that just woke ahead of long-running ones:
    # at 512 they waited for a core 3.7x as long as they ran, at 64 1.7x. On an idle machine
    # nothing waits; the CPU seconds, the same, are the time.
    "--n_ubatch",
    "64",
)


# A small model's steps per generated token are too short to split across cores: the threads
# meet at a barrier after every operation, and that costs more than it saves (SmolLM2-135M on
# 2 cores: 48 tokens/s on one thread, 31 on two). Prompts are batches, and use every core.
SMALL_MODEL_BYTES = 1 << 30


class LocalModelError(LLMConfigError):
    """The embedded model server could not start."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class EmbeddedLlamaServer:
    """llama-cpp-python's server for one GGUF file, tuned for the engine's prompts.

    The engine sends one request at a time (provider concurrency 1) whose long static
    prefix (system text, knowledge pack) is the same from call to call: the server keeps
    the previous prompt's KV cache and evaluates only what follows the shared prefix.
    """

    def __init__(
        self,
        model_path: Path,
        alias: str,
        *,
        threads: int | None = None,
        generation_threads: int | None = None,
        context_tokens: int = 8192,
        startup_timeout_s: float = 120,
        extra_args: Sequence[str] = (),
    ):
        self.model_path = model_path
        self.alias = alias
        self.threads = threads or os.cpu_count() or 1
        self.generation_threads = generation_threads or self._generation_threads_for(model_path)
        self.context_tokens = context_tokens
        self.startup_timeout_s = startup_timeout_s
        self.extra_args = list(extra_args)
        self.port: int | None = None
        self._process: anyio.abc.Process | None = None
        self._log_file: IO[bytes] | None = None

    def _generation_threads_for(self, model_path: Path) -> int:
        try:
            small = model_path.stat().st_size < SMALL_MODEL_BYTES
        except OSError:
            small = True
        return 1 if small else self.threads

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def argv(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "autocomp_core.llm._serve_local",
            "--model",
            str(self.model_path),
            "--model_alias",
            self.alias,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.context_tokens),
            "--n_threads",
            str(self.generation_threads),
            "--n_threads_batch",
            str(self.threads),
            *TUNING,
            *self.extra_args,
        ]  # later options win: the user's come last

    def output_tail(self, limit: int = 2000) -> str:
        if self._log_file is None:
            return ""
        self._log_file.seek(0)
        return self._log_file.read().decode("utf-8", "replace")[-limit:]

    async def start(self) -> None:
        self.port = free_port()
        self._log_file = tempfile.TemporaryFile()
        started = time.monotonic()
        self._process = await anyio.open_process(
            self.argv(), stdin=subprocess.DEVNULL, stdout=self._log_file, stderr=subprocess.STDOUT
        )
        try:
            await self._wait_until_ready()
        except BaseException:
            await self.stop()
            raise
        log.info(
            "llm.local_server_started",
            model=self.alias,
            port=self.port,
            startup_s=round(time.monotonic() - started, 2),
        )

    async def _wait_until_ready(self) -> None:
        assert self._process is not None  # started by start()
        deadline = time.monotonic() + self.startup_timeout_s
        timeout = aiohttp.ClientTimeout(total=2)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            while True:
                if self._process.returncode is not None:
                    raise LocalModelError(
                        f"embedded model server exited with status {self._process.returncode} "
                        f"while starting; its output ends with:\n{self.output_tail()}"
                    )
                try:
                    async with session.get(f"{self.base_url}/models") as response:
                        if response.status == 200:
                            return
                except (aiohttp.ClientError, TimeoutError):
                    pass
                if time.monotonic() > deadline:
                    raise LocalModelError(
                        f"embedded model server did not answer within {self.startup_timeout_s:g}"
                        f" s; its output ends with:\n{self.output_tail()}"
                    )
                await anyio.sleep(0.25)

    async def stop(self) -> None:
        process, self._process = self._process, None
        with anyio.CancelScope(shield=True):
            if process is not None and process.returncode is None:
                process.terminate()
                with anyio.move_on_after(10):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()
            if process is not None:
                await process.aclose()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
