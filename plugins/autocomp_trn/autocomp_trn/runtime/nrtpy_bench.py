"""Device-side timing of a compiled NEFF with nrtpy (the Neuron runtime's Python API).

    python nrtpy_bench.py kernel.neff inputs.npz WARMUP ITERS

Run by the Neuron harness with the Python that has ``nrtpy`` (its wheel cannot share an
environment with the ``nki`` wheel), so this file imports nothing from autocomp_trn.
``inputs.npz`` holds one array per kernel parameter, under the parameter's name (the NEFF's
input names); 2-byte and 1-byte float types travel as unsigned integers of the same bytes.
Prints one JSON line: ``{"durations_ms": [...]}`` (``NrtpyModel.benchmark(mode="device")``,
NeuronCore execution time per timed iteration) or ``{"error": "..."}``.
"""

from __future__ import annotations

import json
import sys

import numpy as np


def main(argv: list[str]) -> int:
    neff, inputs, warmup, iters = argv[1], argv[2], int(argv[3]), int(argv[4])
    from nrtpy import NrtpyModel, NrtpyTensor

    model = NrtpyModel.load_from_neff(neff)  # core 0 of the visible ones: the harness pins one
    with np.load(inputs) as z:
        arrays = {name: z[name] for name in z.files}
    missing = [name for name in model.input_tensors_info if name not in arrays]
    if missing:
        print(
            json.dumps(
                {"error": f"NEFF inputs {missing} are not kernel parameters {sorted(arrays)}"}
            )
        )
        return 1
    tensors = {
        name: NrtpyTensor.from_numpy(arrays[name], name=name) for name in model.input_tensors_info
    }
    stats = model.benchmark(inputs=tensors, warmup_iter=warmup, benchmark_iter=iters, mode="device")
    print(json.dumps({"durations_ms": [float(d) for d in stats.durations_ms]}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
