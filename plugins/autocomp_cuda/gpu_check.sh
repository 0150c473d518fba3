#!/usr/bin/env bash
# GPU check for autocomp-cuda: run on one machine with an NVIDIA GPU, a CUDA build of torch
# and nvcc. Runs the gpu-marked tests (the GPU-only adversarial candidates, CUDA faults,
# full-size runs) and a short benchmark; writes everything to one file.
#   usage: plugins/autocomp_cuda/gpu_check.sh [RESULTS_FILE]     (about 5-8 minutes)
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="${1:-$ROOT/cuda_gpu_check.txt}"
PY="${PYTHON:-python}"
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
export AUTOCOMP_CUDA_CACHE="${AUTOCOMP_CUDA_CACHE:-$(mktemp -d)}"
{
  echo "== autocomp-cuda GPU check $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | head -3
  "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available())"
  echo "== gpu-marked tests"
  cd "$ROOT" && timeout 420 "$PY" -m pytest -m gpu -q -p no:cacheprovider "$HERE/tests" 2>&1 | tail -40
  echo "== benchmark"
  timeout 120 "$PY" "$ROOT/benchmarks/cuda_eval.py" --device cuda 2>&1 | tail -20
} > "$OUT" 2>&1
echo "results written to $OUT"
