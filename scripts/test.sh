#!/usr/bin/env bash
# Runs the whole test suite (core and plugins), one pytest-xdist worker per core, a test
# file per worker at a time. Extra arguments go to pytest (e.g. -n 0 for one process,
# --durations=30 for the slowest tests).
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m pytest -q -p no:cacheprovider -n auto --dist loadfile "$@"
