"""``autocomp-core optimize`` of two imported KernelBench level-2 problems, end to end, against
the LLM test server (no paid model, no network).

For each problem the scripted "model" proposes a fused kernel (CUDA on a GPU, C++ on the CPU
device; ``candidates/``, written for this check), a forward that returns zeros, and a file
with a syntax error. The real engine and harness judge each. Prints, per problem, each
proposal's first feedback line, the best speedup over the eager baseline and the wall time.

    python plugins/autocomp_cuda/kb_check/optimize_kb.py KERNELBENCH_DIR [--device cuda] [--gpu-name H200]
        [--problem kb/L2/1 --problem kb/L2/12] [--cache DIR]

KERNELBENCH_DIR is a checkout of the public KernelBench repository (its ``KernelBench/level2``).
On a GPU the problems run at KernelBench's own sizes; on the CPU device they shrink to the
CPU budget (a rehearsal of the GPU run).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from functools import partial
from pathlib import Path

from autocomp_core.ledger.store import RunStore
from autocomp_core.testing import optimize_args
from autocomp_core.testing.llm_server import LLMTestServer
from autocomp_core.testing.scripted import fenced, is_planning, plan_of

HERE = Path(__file__).parent
#: Imported problem -> the stem of its hand-written fused candidates in candidates/.
PROBLEMS = {"kb/L2/1": "L2_1_relu_bias", "kb/L2/12": "L2_12_mul_leaky_relu"}
FUSE, ZEROS, TYPO = (
    "fuse the elementwise tail into one kernel",
    "skip the work and return zeros",
    "rewrite with a typo",
)
say = partial(print, flush=True)


def proposals(problem: str, device: str) -> dict[str, str]:
    fused = (
        HERE / "candidates" / f"{PROBLEMS[problem]}_{'cuda' if device == 'cuda' else 'cpp'}.py"
    ).read_text()
    # The same file with its forward's answer replaced by zeros of the right shape.
    zeros = (
        "\n".join(
            f"{line.split('return ')[0]}return torch.zeros_like({line.split('return ', 1)[1]})"
            if line.strip().startswith("return ext.")
            else line
            for line in fused.splitlines()
        )
        + "\n"
    )
    return {
        FUSE: fused,
        ZEROS: zeros,
        TYPO: "import torch\nclass ModelNew(torch.nn.Module)\n    pass\n",
    }


def responder(device: str):
    plans: dict[str | None, int] = {}  # plans handed out per problem: each idea in turn
    lock = threading.Lock()

    def respond(request) -> str:
        problem = next((p for p in PROBLEMS if f"Problem {p}:" in request.prompt), None)
        if is_planning(request):
            names = [FUSE, ZEROS, TYPO]
            with lock:
                plans[problem] = plans.get(problem, -1) + 1
                return names[plans[problem] % len(names)]
        plan = plan_of(request.prompt)
        options = (
            proposals(problem, device) if problem else {TYPO: proposals("kb/L2/1", device)[TYPO]}
        )
        return fenced(next((code for name, code in options.items() if name in plan), options[TYPO]))

    return respond


def optimize(
    problem: str,
    kernelbench: Path,
    device: str,
    gpu_name: str,
    cache: str,
    server: LLMTestServer,
    run_dir: Path,
) -> None:
    settings = {
        "backend_options.kernelbench_path": str(kernelbench),
        "backend_options.kernelbench_levels": [2],
        "backend_options.cache_dir": cache,
        "hardware.device": device,
    }
    if gpu_name:
        settings["hardware.gpu_name"] = gpu_name
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from autocomp_core.cli import main; main()",
            *optimize_args(
                "cuda",
                problem,
                f"openai-compatible@{server.openai_base_url}::scripted",
                str(run_dir),
                plans=3,
            ),
            *[a for k, v in settings.items() for a in ("--set", f"{k}={json.dumps(v)}")],
        ],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        say(
            f"{problem}: optimize failed (exit {done.returncode}) after {wall:.0f} s\n{done.stderr[-3000:]}"
        )
        return
    store = RunStore(run_dir)
    by_code = {code.strip(): name for name, code in proposals(problem, device).items()}
    try:
        for cand in store.candidates():
            if cand.origin == "root":
                continue
            result = store.evaluation(cand.eval_key)
            extra = result.get("extra") or {}
            speed = f", speedup {extra['speedup']:.2f}x" if extra.get("speedup") else ""
            say(
                f"  {by_code.get(cand.code.strip(), 'unscripted code')}: {result['feedback'].splitlines()[0]}{speed}"
            )
    finally:
        store.close()
    summary = json.loads((run_dir / "summary.json").read_text())
    say(
        f"{problem}: best speedup {summary.get('speedup')} (best {summary.get('best_score')} ms), "
        f"wall time {wall:.0f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernelbench", type=Path, help="a KernelBench checkout")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument(
        "--gpu-name", default="", help="e.g. H200: the roofline bound for implausible speeds"
    )
    parser.add_argument(
        "--problem", action="append", choices=sorted(PROBLEMS), help="default: both"
    )
    parser.add_argument(
        "--cache", help="the harness's build and reference cache (default: a fresh one)"
    )
    args = parser.parse_args()
    server = LLMTestServer(responder(args.device)).start_in_thread()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for problem in args.problem or list(PROBLEMS):
                say(f"== optimize {problem} on {args.device}")
                optimize(
                    problem,
                    args.kernelbench.resolve(),
                    args.device,
                    args.gpu_name,
                    args.cache or f"{tmp}/cache",
                    server,
                    Path(tmp) / problem.replace("/", "_"),
                )
    finally:
        server.stop_thread()


if __name__ == "__main__":
    main()
