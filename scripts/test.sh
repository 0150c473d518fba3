#!/usr/bin/env bash
# Runs the whole test suite (core and plugins) on pytest-xdist workers, a test file per worker
# at a time: one worker more than the machine has cores, since many tests spend seconds waiting
# (on a timeout, a killed process, a server) and the extra worker uses that core meanwhile.
# Extra arguments go to pytest (e.g. -n 0 for one process, --durations=30 for the slowest
# tests).
# xdist keeps the order collected (conftest.py puts the files that took longest first).
set -euo pipefail
cd "$(dirname "$0")/.."
# The suite starts hundreds of Python processes (the CLI, engines, workers, sandboxed
# programs): each should load the checkout's modules from bytecode, not compile them anew.
# Bytecode is written next to the sources (__pycache__, ignored by git) even where the
# environment asks Python not to, and compiled ahead for the programs that run in a sandbox,
# which cannot write it; data that is Python source (problems, fixtures, kernels) is left out.
unset PYTHONDONTWRITEBYTECODE
.venv/bin/python -m compileall -q -j 0 -x '/(adversarial|kernels)/|/problems/[^/]+/' \
  autocomp_core plugins/*/autocomp_* >/dev/null
workers=$(( $(nproc) + 1 ))
exec .venv/bin/python -m pytest -q -p no:cacheprovider -n "$workers" --dist loadfile --no-loadscope-reorder "$@"
