"""Run llama.cpp's server, exiting when the parent process goes away.

``python -m autocomp_core.llm._serve_local <llama_cpp.server args>``: the embedded model
server must not outlive the run that started it, even when that run is killed hard.
"""

from __future__ import annotations

import os
import runpy
import sys
import threading
import time


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


if __name__ == "__main__":
    # llama.cpp's threads meet at an OpenMP barrier after every operation. Spinning there
    # (libgomp's default) is fast on an idle machine and ruinous on a busy one: a waiting
    # thread holds the core that its descheduled partner needs, and generation drops from
    # ~10 to under 1 token/s with one other busy process per core (an evaluation, a compile).
    # Set before llama_cpp loads libgomp; an explicit value in the environment wins.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    sys.argv = ["llama_cpp.server", *sys.argv[1:]]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
