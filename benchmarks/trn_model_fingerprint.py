"""Every number the Trainium emulator models for the shipped kernels, to compare before and after
a change meant to leave the cost model alone (a renovation of the emulator, say): the verdict of
each problem's baseline (trn1 and trn2; and at the original shape, trace-only, where ours is
smaller), of each optimized kernel, of each honest adversarial fixture and, with ``--source``, of
each program of the original system's published Trainium chains at the measured shapes. Each
verdict is the judge's whole answer (latency, per-engine busy time, the summary text,
instructions, DMA bytes, FLOPs, model limits) less its wall-clock timings.

    python benchmarks/trn_model_fingerprint.py before.json [--source PATH/TO/autocomp-checkout]
    ... change the emulator ...
    python benchmarks/trn_model_fingerprint.py after.json [--source ...] --against before.json

With ``--against`` it names every verdict that differs and exits 1 if one does. In process, one
seed (5); the published conv1d chain at its full shape takes most of the time.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from autocomp_trn.adversarial import HONEST
from autocomp_trn.fidelity import CHAINS, adapt, read_trace
from autocomp_trn.judge import emulate
from autocomp_trn.kernels import OPTIMIZED, optimized_source
from autocomp_trn.problems.catalog import all_specs, spec_by_id

#: the published numbers, and so the calibration, are trn1's: every trn1 row asks for it
TRN1 = {"generation": "trn1"}


def programs(source: Path | None):
    """(name, problem, code, emulate's keyword arguments) of every program fingerprinted."""
    for current in all_specs():
        if current.language != "nki":
            continue
        # "baseline": the legacy kernel, the one these rows measured before the current API
        spec = current.with_legacy_baseline() if current.has_legacy else current
        yield f"{current.id} baseline trn1", spec, spec.baseline_code(), TRN1
        yield f"{current.id} baseline trn2", spec, spec.baseline_code(), {"generation": "trn2"}
        if current.id in OPTIMIZED:
            yield f"{current.id} optimized trn1", spec, optimized_source(current.id), TRN1
        if spec.full_inputs is not None:
            trace_only = {"full": True, "numeric": False, **TRN1}
            yield f"{current.id} baseline full", spec, spec.baseline_code(), trace_only
        if current.has_legacy:  # the current-API baseline, on the generations NKI 0.8 supports
            for generation in ("trn2", "trn3"):
                yield (
                    f"{current.id} current {generation}",
                    current,
                    current.baseline_code(),
                    {"generation": generation},
                )
    for honest in HONEST:
        yield f"honest {honest.file}", spec_by_id(honest.problem), honest.source, TRN1
    for chain in CHAINS if source else ():
        spec = spec_by_id(chain.problem)
        path = source / chain.path
        final = path.with_name(path.name.replace("_trace.py", "_opt.py"))
        steps = read_trace(path.read_text(), chain.path)
        for step, (code, _) in enumerate(steps):
            if step == len(steps) - 1 and final.is_file():
                code = final.read_text()  # as the fidelity command reads it
            yield (
                f"fidelity {chain.name} {step}",
                spec,
                adapt(code, spec.entry)[0],
                {"numeric": False, **TRN1},
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="where to write the fingerprint (JSON)")
    parser.add_argument("--source", type=Path, help="a checkout of the original autocomp")
    parser.add_argument("--against", type=Path, help="an earlier fingerprint to compare with")
    args = parser.parse_args()
    found = {}
    for name, spec, code, kwargs in programs(args.source):
        verdict = emulate(spec, code, seeds=[5], **kwargs)
        verdict.pop("timings", None)
        found[name] = verdict
        print(name, verdict.get("status"), verdict.get("latency_us", ""), flush=True)
    args.out.write_text(json.dumps(found, indent=1, sort_keys=True, default=str))
    if args.against is None:
        return 0
    before = json.loads(args.against.read_text())
    now = json.loads(json.dumps(found, sort_keys=True, default=str))
    differ = sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))
    for name in differ:
        print(f"differs: {name}")
    print(f"{len(now)} verdicts, {len(differ)} differing from {args.against}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
