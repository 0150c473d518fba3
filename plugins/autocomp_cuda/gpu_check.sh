#!/usr/bin/env bash
# GPU check for autocomp-cuda, on one machine with an NVIDIA GPU, a CUDA build of torch and
# nvcc. Every line is printed as it comes (and kept in RESULTS_FILE), so a part cut short
# still shows how far it got; each part has its own time limit.
#
#   usage: plugins/autocomp_cuda/gpu_check.sh [RESULTS_FILE] [PART ...]
#
# Default parts, about 7.5 minutes together (limits in seconds, sized from an H200 run):
#   facts   (20)  device, driver, torch, CUDA, nvcc, free memory
#   builds  (90)  every GPU candidate compiled at once (the tests then find them cached)
#   tests  (180)  the gpu-marked tests (GPU-only hacks, CUDA faults, a CUDA kernel with
#                 ptxas feedback, full sizes, a problem too big for the GPU). The GPU-only
#                 hacks include the ones no CPU run can check: an unjoined side stream, a
#                 persisting-L2 carve-out (h24), a CUDA graph replayed on an unjoined
#                 stream (h25); each must be refused as hack_suspected
#   bench  (105)  benchmarks/cuda_eval.py: per-candidate overhead and where it goes, fused speedups
#   suite   (75)  `cuda suite` over a CUDA kernel and a Triton kernel at full size
# Optional parts, run by name after the default ones (each prints as it goes):
#   gate   (GATE_LIMIT, 600)  the quality gate over a KernelBench checkout at full size:
#                 KB=/path/to/KernelBench; GATE_PROBLEMS (default 'kb/L1/*'), report in gate.md
#   optimize (OPTIMIZE_LIMIT, 420)  `optimize` of two imported level-2 problems against the
#                 LLM test server at full size (kb_check/optimize_kb.py); needs KB too
#
# Rehearsal without a GPU: DEVICE=cpu runs the same parts on the CPU device (tiny sizes, C++
# instead of CUDA candidates; the builds still use nvcc, which compiles without a GPU);
# LIMIT_SCALE=4 multiplies every limit (a small, busy CPU machine).
#
# With the project installed, it uses that. Otherwise it runs from this checkout on the
# machine's own python3 and torch (nothing is installed over them); the few pure-Python
# packages the image lacks come from .whl (made here beforehand by gpu_wheels.sh).
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="${1:-$ROOT/cuda_gpu_check.txt}"
shift || true
PARTS=("$@")
[ ${#PARTS[@]} -eq 0 ] && PARTS=(facts builds tests bench suite)
. "$HERE/gpu_env.sh"
DEVICE="${DEVICE:-cuda}"
export PY HERE ROOT GPU_NAME DEVICE
exec > >(tee "$OUT") 2>&1  # progressive: every line reaches the terminal as it is printed
cd "$ROOT" || exit 1

# part NAME LIMIT_S COMMAND...: a header, the command under its limit, how it ended.
part() {
  local name=$1 limit=$(( $2 * ${LIMIT_SCALE:-1} )) start=$SECONDS rc
  shift 2
  echo "== $name (limit ${limit} s) $(date -u +%T)"
  timeout --kill-after=5 "$limit" bash -c "$*"
  rc=$?
  [ $rc -eq 124 ] && echo "== $name: CUT at its limit of ${limit} s" || echo "== $name: exit $rc"
  echo "== $name took $((SECONDS - start)) s"
}

facts() {
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv 2>&1 | head -3
  command -v nvcc >/dev/null && nvcc --version | tail -1
  "$PY" - <<'PY'
import os, platform, torch
from autocomp_cuda.runtime.common import device_info
print("python", platform.python_version(), "cpus", os.cpu_count(), "torch", torch.__version__,
      "cuda", torch.version.cuda, "available", torch.cuda.is_available())
if torch.cuda.is_available():
    free, total = torch.cuda.mem_get_info()
    print(device_info(torch.device("cuda")), f"free {free / 2**30:.1f} of {total / 2**30:.1f} GiB")
try:
    import triton
    print("triton", triton.__version__)
except Exception as exc:
    print("triton: not importable:", exc)
PY
}

builds() {
  "$PY" - "$HERE"/autocomp_cuda/adversarial/*/*.py <<'PY'
import asyncio, os, sys, time
from pathlib import Path
from autocomp_cuda.adversarial import header
from autocomp_cuda.harness import Harness, Settings

async def main(paths):
    harness = Harness(Path(os.environ["AUTOCOMP_CUDA_CACHE"]), Settings(device="cuda", size="full"))
    gpu = [p for p in map(Path, paths) if header(p).get("gpu") == "true"]
    started = time.perf_counter()

    async def one(path):
        _, failure, _, _ = await harness.build(path.read_text())
        outcome = "built" if failure is None else f"{failure.status} {failure.message[:300]}"
        print(f"{path.name}: {outcome} at {time.perf_counter() - started:.0f} s", flush=True)

    await asyncio.gather(*(one(p) for p in gpu))
    print(f"{len(gpu)} builds in {time.perf_counter() - started:.0f} s")

asyncio.run(main(sys.argv[1:]))
PY
}

tests() { "$PY" -m pytest -m gpu -v -p no:cacheprovider --durations=12 "$HERE/tests"; }

bench() {
  "$PY" "$ROOT/benchmarks/cuda_eval.py" --device "$DEVICE" --repeat 2 --no-cold-build --cache "$AUTOCOMP_CUDA_CACHE"
}

suite() {
  local dir
  dir="$(mktemp -d)"
  mkdir -p "$dir/L2" "$dir/L1"
  local kind=cuda
  [ "$DEVICE" = cpu ] && kind=cpp
  cp "$HERE/autocomp_cuda/adversarial/honest/fused_scale_bias_clamp_$kind.py" "$dir/L2/scale_bias_clamp_mul.py"
  cp "$HERE/autocomp_cuda/adversarial/honest/triton_relu.py" "$dir/L1/relu.py"  # Triton compiled for real
  cli cuda suite "$dir" --problem L2/scale_bias_clamp_mul --problem L1/relu \
    --hw "device=\"$DEVICE\"" --hw "gpu_name=\"$GPU_NAME\"" --json --quiet --out "$dir/results.json" >/dev/null
  "$PY" - "$dir/results.json" <<'PY'
import json, sys
for problem, v in json.load(open(sys.argv[1]))["per_problem"].items():
    print(problem, v["status"], f"speedup {v['speedup']}", f"candidate {v['candidate_ms']} ms", v["message"][:200])
    print("   phases (s):", {k: round(x, 3) for k, x in v["phases_s"].items()})
    print("   eval breakdown (s):", {k: round(x, 3) for k, x in v["breakdown_s"].items()})
    print("   notes:", " | ".join(v["notes"])[:400], "| driver:", v["info"].get("driver"))
PY
}

cli() { "$PY" -c "from autocomp_core.cli import main; main()" "$@"; }

need_kb() {
  if [ -z "${KB:-}" ] || [ ! -d "$KB" ]; then
    echo "set KB=/path/to/KernelBench (a checkout of the public KernelBench repository)"
    return 2
  fi
}

gate() {
  need_kb || return 2
  cli cuda gate --problem "${GATE_PROBLEMS:-kb/L1/*}" --report "$ROOT/gate.md" \
    --hw "device=\"$DEVICE\"" --hw "gpu_name=\"$GPU_NAME\"" --option "kernelbench_path=\"$KB\"" \
    --option "kernelbench_levels=[1,2,3]" --option correctness_timeout_s=60 | tail -3
  [ -f "$ROOT/gate.md" ] && head -20 "$ROOT/gate.md"
}

optimize() {
  need_kb || return 2
  "$PY" "$HERE/kb_check/optimize_kb.py" "$KB" --device "$DEVICE" --gpu-name "$GPU_NAME" --cache "$AUTOCOMP_CUDA_CACHE"
}

export -f facts builds tests bench suite cli need_kb gate optimize
echo "== autocomp-cuda GPU check $(date -u +%FT%TZ): parts ${PARTS[*]} on device $DEVICE"
for name in "${PARTS[@]}"; do
  case "$name" in
    facts) part facts 20 facts ;;
    builds) part builds 90 builds ;;
    tests) part tests 180 tests ;;
    bench) part bench 105 bench ;;
    suite) part suite 75 suite ;;
    gate) part gate "${GATE_LIMIT:-600}" gate ;;
    optimize) part optimize "${OPTIMIZE_LIMIT:-420}" optimize ;;
    *) echo "unknown part: $name (facts builds tests bench suite gate optimize)" ;;
  esac
done
echo "results written to $OUT"
