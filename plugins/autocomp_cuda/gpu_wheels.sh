#!/usr/bin/env bash
# Wheels the GPU check needs beyond what the GPU machine's image holds. That image's python3
# (3.12) has torch, triton, nvcc, pytest, numpy, pluggy, click, anyio and aiohttp, but not the
# packages below and no network; the device tool carries `.whl` (ignored by git) over.
# Versions are the ones this checkout's .venv tests with.
#   usage: plugins/autocomp_cuda/gpu_wheels.sh [PYTHON_VERSION]      (default 3.12)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PYVER="${1:-3.12}"
NAMES="pydantic pydantic-core annotated-types typing-inspection typing-extensions structlog tomli-w pytest-asyncio einops"
pins=$("$ROOT/.venv/bin/python" - $NAMES <<'PY'
import sys
from importlib.metadata import version
print(" ".join(f"{name}=={version(name)}" for name in sys.argv[1:]))
PY
)
rm -rf "$ROOT/.whl" && mkdir -p "$ROOT/.whl"
# shellcheck disable=SC2086
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PYVER" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$ROOT/.whl" $pins
echo "wheels for Python $PYVER in .whl: $(ls "$ROOT/.whl" | wc -l) files, $(du -sh "$ROOT/.whl" | cut -f1)"
