#!/usr/bin/env bash
# CUDA fidelity on a GPU machine (issue 31, item 4): our eager and torch.compile timings of a
# KernelBench level-1 and level-2 sample against the baseline times KernelBench publishes for
# the nearest GPU class (results/timing/<GPU>/baseline_time_torch*.json of the checkout).
#
#   usage: plugins/autocomp_cuda/gpu_fidelity.sh KERNELBENCH_CHECKOUT [OUT_DIR]
#
# Writes to OUT_DIR (default $OUT, else the checkout root of this project): cuda_fidelity.txt
# (everything printed), cuda_fidelity.json (the fidelity command's --json) and
# cuda_fidelity_summary.txt (median ratio and spread per chain; read from the progress lines
# when LIMIT cut the run before the JSON was written). About 4 minutes with the
# defaults on an H200 (an estimate: not run on a GPU yet). Environment:
#   SAMPLE=2      problems drawn per level          SEED=0      the draw's seed
#   LEVELS=[1,2]  KernelBench levels                GPU_CLASS=  a published folder or class
#   COMPILED=true also time torch.compile(Model)    LIMIT=270   seconds for the whole run
#   PER_PROGRAM=150  seconds per evaluation (the fidelity command's --timeout)
# DRY_RUN=1 prints the command and the sample the reader draws, evaluates nothing (runs on
# any machine with the project: the reader is asked for a GPU class explicitly there).
# The checkout needs only its KernelBench/ and results/timing/ folders (1.5 MB): on a machine
# without network, carry an export of them (`git -C KB archive HEAD KernelBench results/timing
# | tar -x -C build/kb`; build/ is ignored) and name its commit with KB_COMMIT=sha.
#
# With the project installed, it uses that. Otherwise it runs from this checkout on the
# machine's own python3 and torch, as gpu_check.sh does (.whl made by gpu_wheels.sh).
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
KB="${1:-}"
if [ -z "$KB" ] || [ ! -d "$KB" ]; then
  echo "usage: $0 KERNELBENCH_CHECKOUT [OUT_DIR] (a checkout of the public KernelBench repository)"
  exit 2
fi
KB="$(cd "$KB" && pwd)"
DEST="${2:-${OUT:-$ROOT}}"
mkdir -p "$DEST"
. "$HERE/gpu_env.sh"
SAMPLE="${SAMPLE:-2}" SEED="${SEED:-0}" LEVELS="${LEVELS:-[1,2]}" GPU_CLASS="${GPU_CLASS:-}"
COMPILED="${COMPILED:-true}" LIMIT="${LIMIT:-270}" PER_PROGRAM="${PER_PROGRAM:-150}"
exec > >(tee "$DEST/cuda_fidelity.txt") 2>&1
cd "$ROOT" || exit 1

echo "== autocomp-cuda fidelity $(date -u +%FT%TZ) on ${GPU_NAME:-no GPU seen by nvidia-smi}"
echo "KernelBench: $KB, commit $(git -C "$KB" rev-parse HEAD 2>/dev/null || echo "${KB_COMMIT:-unknown (not a git checkout; KB_COMMIT=sha names it)}")"
"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available())"

args=(fidelity cuda --source "$KB" --json "$DEST/cuda_fidelity.json" --timeout "$PER_PROGRAM"
  --hw 'device="cuda"' --hw "gpu_name=\"$GPU_NAME\""
  --option "fidelity_sample=$SAMPLE" --option "fidelity_seed=$SEED"
  --option "fidelity_levels=$LEVELS" --option "compile_baseline=$COMPILED"
  --option correctness_timeout_s=60)
[ -n "$GPU_CLASS" ] && args+=(--option "fidelity_gpu_class=\"$GPU_CLASS\"")

if [ -n "${DRY_RUN:-}" ]; then
  echo "would run: autocomp-core ${args[*]}"
  "$PY" - "$KB" "$SAMPLE" "$SEED" "$LEVELS" "$GPU_CLASS" "$GPU_NAME" "$COMPILED" <<'PY'
import json, sys
from pathlib import Path
from autocomp_cuda import fidelity
from autocomp_cuda.backend import CudaBackend
kb, sample, seed, levels, gpu_class, gpu_name, compiled = sys.argv[1:]
# the folder the run would choose (by nvidia-smi's name here; the run asks torch), else H100
chosen = fidelity.choose_timing_set(
    fidelity.read_timing_sets(Path(kb)), gpu_name, gpu_class or ("" if gpu_name else "H100")
)
print("published timings:", chosen.label)
backend = CudaBackend(
    hardware={"device": "cuda"},
    options={"fidelity_gpu_class": chosen.folder, "fidelity_sample": int(sample),
             "fidelity_seed": int(seed), "fidelity_levels": json.loads(levels),
             "compile_baseline": compiled == "true"},
)
for p in backend.fidelity_programs(Path(kb)):
    print(f"{p.chain:<20} {p.step:>2} {p.problem.id:<10} {p.name[:44]:<44} {p.measured:>7.4g} ms")
PY
  exit $?
fi

echo "== autocomp-core ${args[*]} (limit $LIMIT s)"
start=$SECONDS
timeout --kill-after=10 "$LIMIT" "$PY" -c "from autocomp_core.cli import main; main()" "${args[@]}"
rc=$?
[ $rc -eq 124 ] && echo "== CUT at its limit of $LIMIT s (no JSON: the summary is read from the lines above)"
echo "== fidelity exit $rc, took $((SECONDS - start)) s"
sleep 1  # tee has written every line to cuda_fidelity.txt by now

"$PY" - "$DEST/cuda_fidelity.json" "$DEST/cuda_fidelity.txt" <<'PY' | tee "$DEST/cuda_fidelity_summary.txt"
# median modelled/measured and its spread per chain (each level, eager and torch.compile):
# from the command's JSON, or, when the run was cut before writing it, from its progress lines
import json, math, os, re, statistics, sys
json_path, text_path = sys.argv[1:]
if os.path.exists(json_path):
    report = json.load(open(json_path))
    programs = report["programs"]
    folders = sorted({p["source"].rsplit("(", 1)[-1].rstrip(")") for p in programs})
    print("published timings:", ", ".join(folders))
else:
    report, programs = None, []
    done = re.compile(r"^\[\d+/\d+\] (.+?) step (\d+) (\S+): (?:([-+.\de]+) ms \(measured "
                      r"([-+.\de]+)\)|refused: (.*))$")
    for line in open(text_path):
        if m := done.match(line.strip()):
            chain, _, name, ours, theirs, why = m.groups()
            programs.append({"chain": chain, "problem": name, "refused": why or "",
                             "ratio": float(ours) / float(theirs) if ours else None})
    print(f"from the progress lines of {text_path}: {len(programs)} programs finished")
chains = {}
for p in programs:
    chains.setdefault(p["chain"], []).append(p)
for chain, members in [*chains.items(), ("all", programs)]:
    ratios = sorted(p["ratio"] for p in members if p["ratio"] is not None)
    refused = [f"{p['problem']} ({p['refused'][:80]})" for p in members if p["ratio"] is None]
    line = f"{chain}: {len(ratios)} of {len(members)} timed"
    if ratios:
        q = statistics.quantiles(ratios, n=4, method="inclusive") if len(ratios) > 1 else ratios * 3
        geo = math.exp(statistics.fmean(math.log(r) for r in ratios))
        line += (f"; ours/published median {statistics.median(ratios):.3g}, geomean {geo:.3g}, "
                 f"IQR {q[0]:.3g}-{q[2]:.3g}, range {ratios[0]:.3g}-{ratios[-1]:.3g}")
    if report is not None:
        group = report["overall"]["all"] if chain == "all" else report["chains"][chain]
        if group.get("spearman") is not None:  # pooled on log time for "all"
            line += f"; Spearman {group['spearman']:.3g}"
    print(line)
    for r in refused:
        print("   refused:", r)
PY
exit "$rc"
