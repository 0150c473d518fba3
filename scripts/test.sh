#!/usr/bin/env bash
# Runs the whole test suite (core and plugins). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
