"""The engine's side of the judge (``runtime/judge_main.py``): one trusted process per device
slot that compares outputs with the reference, so the engine never imports torch.

The process is started on first need and kept: it has torch imported, the device context
made and the last references loaded when the next candidate arrives. It is plain
``subprocess`` with a thread per request, not an asyncio subprocess, so one harness can be
used from successive event loops (``asyncio.run`` per call in scripts and tests).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import threading
import weakref
from typing import Any, ClassVar


class JudgeError(RuntimeError):
    """The judge process died or did not answer in time (the harness's fault, not the candidate's)."""


#: A judge with nothing to do leaves after this long (the harness starts it again on need).
IDLE_S = 120.0


class Judge:
    """One judge process. ``Judge.shared(env)`` gives the one every harness of this process
    uses for that device (a test session makes many harnesses; each would pay torch's import)."""

    _shared: ClassVar[dict[tuple, Judge]] = {}
    _shared_lock = threading.Lock()

    @classmethod
    def shared(cls, env: dict[str, str]) -> Judge:
        key = tuple(sorted(env.items()))
        with cls._shared_lock:
            if key not in cls._shared:
                cls._shared[key] = cls(env, IDLE_S)
            return cls._shared[key]

    def __init__(self, env: dict[str, str], idle_s: float) -> None:
        self.env = env
        self.idle_s = idle_s
        self._proc: subprocess.Popen | None = None
        self._greeted = False  # the process said it is ready (its imports are done)
        self._log = tempfile.TemporaryFile()
        self._lock = threading.Lock()
        self._finalizer = weakref.finalize(self, _stop, None, False)

    def start(self) -> None:
        """Start the process if none runs; returns at once (its imports overlap with the caller's work)."""
        if self._proc is None or self._proc.poll() is not None:
            self._finalizer.detach()
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "autocomp_cuda.runtime.judge_main", f"{self.idle_s:g}"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._log,
                env=self.env,
                text=True,
                start_new_session=True,
            )  # Ctrl-C in the engine's terminal is the engine's to handle
            self._greeted = False
            self._finalizer = weakref.finalize(self, _stop, self._proc, False)

    def _tail(self) -> str:
        self._log.seek(0)
        return self._log.read()[-2000:].decode(errors="replace")

    def _exchange(self, proc: subprocess.Popen, request: dict[str, Any]) -> str:
        try:
            if not self._greeted:
                if not proc.stdout.readline():
                    return ""
                self._greeted = True
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
            return proc.stdout.readline()
        except (OSError, ValueError):  # a closed pipe
            return ""

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            for attempt in (1, 2):  # an idle judge may have just left: one fresh start
                self.start()
                proc = self._proc
                line = self._exchange(proc, request)
                if line:
                    return json.loads(line)
                _stop(proc, graceful=False)
                if proc is not self._proc:  # closed on purpose (a timeout): no second try
                    break
                if attempt == 2:
                    raise JudgeError(f"the judge died: {self._tail()}")
            raise JudgeError("the judge was stopped")

    async def ask(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send one request and wait for its answer; on timeout the judge is killed."""
        try:
            return await asyncio.wait_for(asyncio.to_thread(self._ask, request), timeout_s)
        except TimeoutError:
            self.close(graceful=False)  # unblocks the thread still reading
            raise JudgeError(f"the judge did not answer within {timeout_s:g} s") from None

    def close(self, graceful: bool = True) -> None:
        proc, self._proc = self._proc, None
        _stop(proc, graceful)


def _stop(proc: subprocess.Popen | None, graceful: bool = True) -> None:
    if proc is None or proc.poll() is not None:
        return
    try:
        if graceful:
            proc.stdin.close()  # the judge leaves at the end of its input
            proc.wait(timeout=5)
            return
    except Exception:
        pass
    proc.kill()
    proc.wait()
