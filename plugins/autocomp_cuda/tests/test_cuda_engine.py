"""``autocomp-core optimize`` on the cuda backend, end to end: a real engine subprocess, an LLM
protocol server on 127.0.0.1 whose "model" proposes an honest fused C++ kernel, a hack and a
broken file, and the real harness judging each on the CPU device."""
from __future__ import annotations

import json
import subprocess
import sys

from autocomp_core.store import RunStore
from autocomp_core.testing.llm_server import LLMTestServer

from autocomp_cuda.adversarial import ROOT as ADV

PROPOSALS = {
    "fuse everything into one C++ loop": (ADV / "honest" / "fused_scale_bias_clamp_cpp.py").read_text(),
    "skip the work and return zeros": ("import torch\nimport torch.nn as nn\n\n"
                                       "class ModelNew(nn.Module):\n    def __init__(self, cols):\n"
                                       "        super().__init__()\n"
                                       "    def forward(self, x, gate, residual):\n"
                                       "        return torch.zeros_like(x)\n"),
    "rewrite with a typo": "import torch\nclass ModelNew(torch.nn.Module)\n    pass\n",
}


def respond(request) -> str:
    prompt = request.prompt
    if prompt.rstrip().endswith("Plan:"):  # planning: one idea per plan slot, chosen by the seed
        names = list(PROPOSALS)
        return names[(request.params.get("seed") or 0) % len(names)]
    plan = prompt.split("## Plan\n", 1)[1].split("\n", 1)[0] if "## Plan\n" in prompt else ""
    code = next((code for name, code in PROPOSALS.items() if name in plan), PROPOSALS["rewrite with a typo"])
    return f"```python\n{code}```\n"


def test_optimize_on_the_cpu_device_keeps_the_honest_kernel_and_refuses_the_rest(tmp_path, cuda_cache):
    server = LLMTestServer(respond).start_in_thread()
    try:
        run_dir = tmp_path / "run"
        done = subprocess.run(
            [sys.executable, "-c", "from autocomp_core.cli import main; main()", "optimize",
             "--backend", "cuda", "--problem", "L2/scale_bias_clamp_mul",
             "--model", f"openai-compatible@{server.openai_base_url}::scripted",
             "--iterations", "1", "--beam-size", "1", "--plans", "6", "--codes", "1",
             "--run-dir", str(run_dir), "--quiet", "--json",
             "--set", f"backend_options.cache_dir={json.dumps(str(cuda_cache))}",
             "--set", "backend_options.reps=5"],
            capture_output=True, text=True, timeout=900)
    finally:
        server.stop_thread()
    assert done.returncode == 0, done.stderr[-3000:]
    store = RunStore(run_dir)
    verdicts = {}
    for cand in store.candidates():
        if cand.origin == "root":
            root = cand.code
            continue
        name = next(n for n, code in PROPOSALS.items() if code.strip() == cand.code.strip())
        result = store.evaluation(cand.eval_key)
        verdicts[name] = (result["correct"], result["feedback"].splitlines()[0])
    store.close()
    assert verdicts == {
        "fuse everything into one C++ loop": (True, "status: ok"),
        "skip the work and return zeros": (False, "status: mismatch"),
        "rewrite with a typo": (False, "status: compile_error"),
    }
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["problem"] == "L2/scale_bias_clamp_mul"
    # The best program is the baseline or the fused kernel, whichever measured faster here.
    best = (run_dir / "best.py").read_text().strip()
    assert best in {PROPOSALS["fuse everything into one C++ loop"].strip(), root.strip()}
