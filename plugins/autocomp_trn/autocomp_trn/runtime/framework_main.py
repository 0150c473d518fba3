"""The PyTorch-source baseline of a translation problem, run as the framework would run it.

    python -m autocomp_trn.runtime.framework_main request.json

Only ever runs a problem's own PyTorch baseline (candidates must be NKI kernels). The model
runs on CPU tensors under a dispatch mode that records every ATen operator; its outputs are
checked like a kernel's, and its latency is modelled as the framework lowering each operator
on its own (torch-neuronx without fusion): each operator reads its inputs from HBM and writes
its output back, at the engines' peak rates, plus a fixed per-operator overhead.
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path

import numpy as np

OP_FIXED_US = 2.0  # per-operator launch and DMA setup in the lowered graph
TRANSCENDENTAL = (
    "exp",
    "log",
    "tanh",
    "sigmoid",
    "silu",
    "gelu",
    "softmax",
    "sqrt",
    "rsqrt",
    "erf",
)
MATMUL = ("mm", "addmm", "bmm", "matmul")


def op_cost_us(name: str, ins: list, outs: list, gen) -> float:
    nbytes = sum(t.numel() * t.element_size() for t in (*ins, *outs))
    elems = max((t.numel() for t in outs), default=0)
    pe_fp32 = gen.pe_tflops_bf16 / 4 * 1e12
    terms = [nbytes / (gen.hbm_gbs * gen.dma_efficiency) / 1e3]
    if any(name.startswith(m) for m in MATMUL) and len(ins) >= 2:
        k = ins[-1].shape[-2] if ins[-1].dim() >= 2 else 1
        terms.append(2.0 * elems * k / pe_fp32 * 1e6)
    elif any(t in name for t in TRANSCENDENTAL):
        terms.append(elems / (128 * gen.act_ghz * 1e9) * 1e6)
    else:
        terms.append(2 * elems / (128 * gen.dve_ghz * 1e9) * 1e6)
    return OP_FIXED_US + max(terms)


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[1]).read_text())
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from autocomp_trn.check import compare
    from autocomp_trn.emulator.hardware import GENERATIONS
    from autocomp_trn.problems.catalog import spec_by_id

    spec = spec_by_id(request["problem"])
    gen = GENERATIONS[request["generation"]]
    namespace: dict = {"__name__": "baseline"}
    exec(compile(Path(request["source"]).read_text(), "baseline.py", "exec"), namespace)
    model = namespace["Model"]()
    ops: list[tuple[str, float]] = []

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            flat_in = [a for a in args if isinstance(a, torch.Tensor)]
            flat_out = [
                o
                for o in (out if isinstance(out, (tuple, list)) else [out])
                if isinstance(o, torch.Tensor)
            ]
            if recording:
                ops.append((func.__name__, op_cost_us(func.__name__, flat_in, flat_out, gen)))
            return out

    seeds = request["seeds"]
    inputs = spec.make_inputs(seeds)
    outputs: list[list[np.ndarray]] = [[] for _ in spec.outputs]
    with torch.no_grad():
        for s in range(len(seeds)):
            recording = s == 0
            args = [torch.from_numpy(np.ascontiguousarray(x[s].astype(np.float32))) for x in inputs]
            with Recorder():
                result = model(*args)
            result = result if isinstance(result, (tuple, list)) else (result,)
            for k, r in enumerate(result):
                outputs[k].append(r.numpy())
    refs_per_seed = [
        spec.reference(*[x[s].astype(np.float64) for x in inputs]) for s in range(len(seeds))
    ]
    refs = [np.stack([r[k] for r in refs_per_seed]) for k in range(len(spec.outputs))]
    verdict = compare([np.stack(o) for o in outputs], refs, spec.atol, spec.rtol)
    latency = sum(c for _, c in ops) + gen.launch_ns / 1e3
    lines = [
        f"modelled latency {latency:.2f} us (framework lowering of the PyTorch source, one HBM round trip "
        f"per operator; emulator cost model, not a measurement)",
        "operators: " + ", ".join(f"{n} {c:.1f} us" for n, c in ops),
    ]
    out = {
        "status": "ok" if verdict.ok else "wrong_answer",
        "message": verdict.message,
        "latency_us": latency,
        "summary": "\n".join(lines),
        "instructions": len(ops),
        "lower_bound_us": spec.lower_bound_us(gen),
        "worst_error_ratio": verdict.worst_ratio,
        "busy_us": {},
        "critical": "framework",
    }
    sys.stdout.write("\n" + json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except ImportError as exc:
        sys.stdout.write(
            "\n"
            + json.dumps(
                {
                    "status": "infra_error",
                    "message": (
                        f"{exc}: PyTorch-source problems run their baseline with PyTorch; install it with "
                        "pip install 'autocomp-trn[torch]'"
                    ),
                }
            )
            + "\n"
        )
    except Exception:
        sys.stdout.write(
            "\n"
            + json.dumps({"status": "infra_error", "message": traceback.format_exc()[-3000:]})
            + "\n"
        )
