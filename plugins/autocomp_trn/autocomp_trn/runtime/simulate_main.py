"""The simulator side of the differential check: runs kernels through the Neuron SDK's
``nki.simulate`` (the real ``nki`` package; not runnable where it is not installed).

    python -m autocomp_trn.runtime.simulate_main request.json

For each job of the request (a folder holding ``kernel.py`` and ``inputs.npz``, one array per
input with a leading seed axis, stored as float32 with the input dtypes beside them) it calls
``nki.simulate(kernel)(*inputs)`` once per seed and writes ``outputs.npz`` (float32 or wider).
Prints one ``AUTOCOMP_TRN_SIMULATED {json}`` line per job, or a single ``no_sdk`` line.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import traceback
from pathlib import Path

import numpy as np

TAG = "AUTOCOMP_TRN_SIMULATED "


def emit(obj: dict) -> None:
    print(TAG + json.dumps(obj), flush=True)


def load(path: Path, entry: str):
    spec = importlib.util.spec_from_file_location(f"kernel_{path.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # a shipped probe or baseline, not a candidate
    return getattr(module, entry)


def run_job(nki, job: dict) -> dict:
    from autocomp_trn.emulator import dtypes

    folder = Path(job["folder"])
    kernel = load(folder / "kernel.py", job["entry"])
    with np.load(folder / "inputs.npz") as z:
        inputs = [z[f"arr_{k}"].astype(dtypes.DTYPES[d]) for k, d in enumerate(job["dtypes"])]
    per_output: list[list[np.ndarray]] = []
    for s in range(inputs[0].shape[0]):
        result = nki.simulate(kernel)(
            *[np.ascontiguousarray(x[s]) for x in inputs], **job["kwargs"]
        )
        result = result if isinstance(result, (tuple, list)) else (result,)
        if not per_output:
            per_output = [[] for _ in result]
        for k, r in enumerate(result):
            per_output[k].append(np.asarray(r).astype(np.float64))
    np.savez(folder / "outputs.npz", *[np.stack(o) for o in per_output])
    return {"name": job["name"], "status": "ok", "outputs": len(per_output)}


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[1]).read_text())
    try:
        import nki
    except ImportError as exc:
        emit(
            {
                "status": "no_sdk",
                "message": f"the Neuron SDK's nki package is not installed ({exc})",
            }
        )
        return 0
    if not hasattr(nki, "simulate"):
        emit(
            {
                "status": "no_sdk",
                "message": f"this nki ({getattr(nki, '__version__', 'unknown version')}) has no "
                "nki.simulate: the CPU simulator came with NKI 0.3 (Neuron 2.29)",
            }
        )
        return 0
    for job in request["jobs"]:
        try:
            emit(run_job(nki, job))
        except Exception:
            emit(
                {"name": job["name"], "status": "error", "message": traceback.format_exc()[-1500:]}
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
