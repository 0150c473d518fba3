#!/usr/bin/env bash
# Static checks: ruff lint and format on everything (core, plugins, tests), mypy on the core.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -m ruff check --no-cache .
.venv/bin/python -m ruff format --check --no-cache .
.venv/bin/python -m mypy
