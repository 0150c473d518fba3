"""Neuron mode harness, run on a machine with the Neuron SDK and a NeuronCore (not runnable here).

    python -m autocomp_trn.runtime.neuron_main request.json

v1 kernels (``neuronxcc.nki``): ``nki.baremetal`` runs the kernel on fresh inputs (one call per
seed) for the check, ``nki.benchmark(warmup, iters)`` gives the P99 latency. v2 kernels
(``nki``): called with NumPy inputs for the check; latency from neuron-profile's summary of a
compiled NEFF. Prints ``AUTOCOMP_TRN_RESULT {json}``.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import traceback
from pathlib import Path

import numpy as np

TAG = "AUTOCOMP_TRN_RESULT "


def emit(obj: dict) -> int:
    print(TAG + json.dumps(obj), flush=True)
    return 0


def load_kernel(path: Path, entry: str):
    spec = importlib.util.spec_from_file_location("kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # the candidate, inside the sandbox
    return getattr(module, entry)


def main(argv: list[str]) -> int:
    req = json.loads(Path(argv[1]).read_text())
    work = Path(argv[1]).parent
    from autocomp_trn.check import compare
    from autocomp_trn.emulator import dtypes
    from autocomp_trn.neuron import parse_profile_summary, profile_commands
    from autocomp_trn.problems.catalog import spec_by_id

    spec = spec_by_id(req["problem"])
    try:
        kernel = load_kernel(work / req["kernel"], req["entry"])
    except Exception:
        return emit({"status": "compile_error", "message": traceback.format_exc()[-2000:]})
    inputs = spec.make_inputs(req["seeds"])
    outputs: list[list[np.ndarray]] = [[] for _ in spec.outputs]
    try:
        if req["api"] == "v1":
            from neuronxcc import nki

            run = nki.baremetal(kernel, save_neff_name=str(work / "kernel.neff"))
        else:
            run = kernel
        for s in range(len(req["seeds"])):
            result = run(*[x[s] for x in inputs], **req["kwargs"])
            result = result if isinstance(result, (tuple, list)) else (result,)
            for k, r in enumerate(result):
                outputs[k].append(np.asarray(r))
    except Exception:
        return emit({"status": "compile_error", "message": traceback.format_exc()[-2000:]})
    for k, ((_, want), got) in enumerate(zip(spec.outputs, outputs, strict=True)):
        dtype = np.dtype(dtypes.DTYPES[want])
        wrong = next((o.dtype for o in got if o.dtype != dtype), None)
        if wrong is not None:  # a narrower output would pass the tolerance and halve its traffic
            return emit(
                {
                    "status": "wrong_answer",
                    "message": f"output {k} has dtype {wrong}, the problem expects {want}",
                }
            )
    refs_per_seed = [
        spec.reference(*[x[s].astype(np.float64) for x in inputs], **spec.kwargs)
        for s in range(len(req["seeds"]))
    ]
    refs = [np.stack([r[k] for r in refs_per_seed]) for k in range(len(spec.outputs))]
    verdict = compare([np.stack(o) for o in outputs], refs, spec.atol, spec.rtol)
    if not verdict.ok:
        return emit({"status": "wrong_answer", "message": verdict.message})
    try:
        if req["api"] == "v1":
            from neuronxcc import nki

            bench = nki.benchmark(kernel, warmup=req["warmup"], iters=req["iters"])
            bench(*[x[0] for x in inputs], **req["kwargs"])
            latency_us = float(bench.benchmark_result.nc_latency.get_latency_percentile(99))
        else:
            if not req.get("profiler"):
                return emit({"status": "infra_error", "message": "neuron-profile is not installed"})
            capture, view = profile_commands(
                req["profiler"], work / "kernel.neff", work / "profile.ntff"
            )
            subprocess.run(capture, check=True, cwd=work, capture_output=True, timeout=600)
            summary = subprocess.run(
                view, check=True, cwd=work, capture_output=True, text=True, timeout=600
            )
            latency_us = parse_profile_summary(summary.stdout)
    except Exception:
        return emit({"status": "infra_error", "message": traceback.format_exc()[-2000:]})
    return emit(
        {"status": "ok", "latency_us": latency_us, "worst_error_ratio": verdict.worst_ratio}
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv))
