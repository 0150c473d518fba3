#!/usr/bin/env bash
# Static checks: ruff on everything (core, plugins, tests), mypy on the core.
# (Formatting is checked once the tree has been formatted: `ruff format --check`.)
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -m ruff check --no-cache .
.venv/bin/python -m mypy
