#!/usr/bin/env bash
# GPU check for autocomp-cuda, on one machine with an NVIDIA GPU, a CUDA build of torch and
# nvcc. Runs the gpu-marked tests (GPU-only adversarial candidates, CUDA faults, a real CUDA
# kernel with ptxas feedback, full sizes), a short benchmark and a small suite run; writes
# everything to one file. Each part has its own time limit; together under 8 minutes.
#
# With the project installed, it uses that. Otherwise it runs from this checkout on the
# machine's own python3 and torch (nothing is installed over them); the few pure-Python
# packages the image lacks come from .whl (made here beforehand by gpu_wheels.sh).
#   usage: plugins/autocomp_cuda/gpu_check.sh [RESULTS_FILE]
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="${1:-$ROOT/cuda_gpu_check.txt}"
PY="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1
if [ -z "${CUDA_HOME:-}" ] && [ -d /usr/local/cuda ]; then export CUDA_HOME=/usr/local/cuda; fi
export AUTOCOMP_CUDA_CACHE="${AUTOCOMP_CUDA_CACHE:-$(mktemp -d)}"
if ! "$PY" -c "import autocomp_cuda" 2>/dev/null; then
  if [ -d "$ROOT/.whl" ]; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/autocomp-site "$ROOT"/.whl/*.whl
    export PYTHONPATH="/tmp/autocomp-site${PYTHONPATH:+:$PYTHONPATH}"
  fi
  export PYTHONPATH="$ROOT:$HERE:$PYTHONPATH"
  export AUTOCOMP_PLUGINS=autocomp_cuda.plugin  # the entry point of an installed plugin
fi
CLI=("$PY" -c "from autocomp_core.cli import main; main()")
SUITE="$(mktemp -d)"
mkdir -p "$SUITE/L2" "$SUITE/L1"
cp "$HERE/autocomp_cuda/adversarial/honest/fused_scale_bias_clamp_cuda.py" "$SUITE/L2/scale_bias_clamp_mul.py"
cp "$HERE/autocomp_cuda/adversarial/honest/triton_relu.py" "$SUITE/L1/relu.py"  # Triton compiled for real
{
  echo "== autocomp-cuda GPU check $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | head -3
  "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available())"
  command -v nvcc && nvcc --version | tail -1
  echo "== build every GPU candidate at once (the tests then find them in the build cache)"
  cd "$ROOT" && timeout 150 "$PY" - "$HERE"/autocomp_cuda/adversarial/*/*.py <<'PY' 2>&1 | tail -20
import asyncio, os, sys, time
from pathlib import Path
from autocomp_cuda.adversarial import header
from autocomp_cuda.harness import Harness, Settings

async def main(paths):
    harness = Harness(Path(os.environ["AUTOCOMP_CUDA_CACHE"]), Settings(device="cuda", size="full"))
    gpu = [p for p in map(Path, paths) if header(p).get("gpu") == "true"]
    started = time.perf_counter()
    built = await asyncio.gather(*(harness.build(p.read_text()) for p in gpu))
    for path, (_, failure, _, _) in zip(gpu, built):
        print(f"{path.name}: {'built' if failure is None else failure.status + ' ' + failure.message[:300]}")
    print(f"{len(gpu)} builds in {time.perf_counter() - started:.0f} s")

asyncio.run(main(sys.argv[1:]))
PY
  echo "== gpu-marked tests"
  timeout 200 "$PY" -m pytest -m gpu -q -p no:cacheprovider --durations=12 "$HERE/tests" 2>&1 | tail -60
  echo "== benchmark"
  timeout 100 "$PY" "$ROOT/benchmarks/cuda_eval.py" --device cuda --repeat 3 --cache "$AUTOCOMP_CUDA_CACHE" 2>&1 | tail -20
  echo "== suite (a CUDA kernel and a Triton kernel, full size)"
  GPU_NAME="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
  timeout 30 "${CLI[@]}" cuda suite "$SUITE" --problem L2/scale_bias_clamp_mul --problem L1/relu \
    --hw device=cuda --hw "gpu_name=\"$GPU_NAME\"" 2>&1 | tail -12
} > "$OUT" 2>&1
echo "results written to $OUT"
