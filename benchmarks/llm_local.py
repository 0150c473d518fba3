"""The embedded model and the README demo: where the time goes, with the previous
configuration and the current one side by side in one run.

  prompt     the embedded server (started as the engine starts it), a fresh ~N-token prompt
             (Gemmini knowledge-pack text), one output token: prompt tokens per second (wall,
             and per CPU-second of the server, which a busy machine distorts less)
  reuse      the same prompt with another last line: the share of the first call's time
             it takes (small when the server reuses the evaluated prefix)
  generate   after that prefix, up to 200 tokens: generated tokens per second
  demo       `autocomp-core optimize examples/demo.toml` with that configuration: prompt
             tokens sent, tokens generated, wall seconds and CPU seconds (the run and the
             model server together; a shared machine stretches wall time, far less CPU time)

The previous configuration is the one before the demo's prompts were fitted to the small
model: the whole knowledge pack in every prompt (ISA reference, examples), plans allowed as
many tokens as programs, and tokens generated on every core (now one thread for a small
model: its per-token steps are too short to share between cores).

    python benchmarks/llm_local.py [--prompt-tokens 3000] [--no-demo] [--only current] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import openai

from autocomp_core.llm.local_server import TUNING, EmbeddedLlamaServer
from autocomp_core.llm.providers import SHIPPED_LOCAL_MODEL, local_model_file
from autocomp_core.llm.settings import LLMSettings

ROOT = Path(__file__).resolve().parents[1]
KNOWLEDGE = ROOT / "plugins" / "autocomp_gemmini" / "autocomp_gemmini" / "knowledge"

# Each configuration: extra server options, environment, and `--set` overrides of the demo.
PREVIOUS_DEMO = ["prompt.knowledge=full", "llm.plan_max_tokens=768"]
CONFIGURATIONS: dict[str, tuple[list[str], dict[str, str], list[str]]] = {
    "previous": (["--n_threads", str(os.cpu_count() or 1)], {}, PREVIOUS_DEMO),
    "current": ([], {}, []),
}


def server_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def prompt_text(tokens: int) -> str:
    text = "\n\n".join(p.read_text() for p in sorted(KNOWLEDGE.rglob("*.md")))
    while len(text) < tokens * 4:
        text += "\n\n" + text
    return text[: tokens * 4]  # about 4 characters per token


async def measure_server(extra: list[str], tokens: int) -> dict:
    """Speeds of one configuration (its environment is already set)."""
    server = EmbeddedLlamaServer(
        local_model_file(SHIPPED_LOCAL_MODEL, LLMSettings()), SHIPPED_LOCAL_MODEL, extra_args=extra
    )
    await server.start()
    # a generous limit: the previous configuration on a busy machine needs minutes per call
    client = openai.AsyncOpenAI(
        api_key="none", base_url=server.base_url, max_retries=0, timeout=3600
    )
    pid = server._process.pid

    async def call(user: str, max_tokens: int) -> tuple[float, float, object]:
        wall, cpu = time.perf_counter(), server_cpu_s(pid)
        reply = await client.chat.completions.create(
            model=SHIPPED_LOCAL_MODEL,
            max_tokens=max_tokens,
            temperature=0.0,
            messages=[
                {"role": "system", "content": "You are an expert performance engineer."},
                {"role": "user", "content": user},
            ],
        )
        return time.perf_counter() - wall, server_cpu_s(pid) - cpu, reply.usage

    try:
        context = prompt_text(tokens)
        await call("warm-up", 1)
        first_s, first_cpu, usage = await call(context + "\nSummarize the above.", 1)
        reuse_s, _, _ = await call(context + "\nList the instructions above.", 1)
        gen_s, gen_cpu, gen_usage = await call(
            context + "\nWrite a long C program that tiles a GEMM for this accelerator.", 200
        )
    finally:
        await client.close()
        await server.stop()
    generated = gen_usage.completion_tokens
    return {
        "prompt_tokens": usage.prompt_tokens,
        "prompt_tok_s": usage.prompt_tokens / first_s,
        "prompt_tok_cpu_s": usage.prompt_tokens / first_cpu,
        "reuse_share": reuse_s / first_s,
        "generated_tokens": generated,
        "gen_tok_s": generated / gen_s,
        "gen_tok_cpu_s": generated / gen_cpu,
    }


def demo_run(extra: list[str], overrides: list[str]) -> dict:
    """Wall and CPU seconds of the README demo with these server options and overrides,
    and the tokens its LLM calls sent and received."""
    sets = [f"llm.local_server_args={json.dumps(extra)}", *overrides]
    with tempfile.TemporaryDirectory() as run_dir:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "from autocomp_core.cli import main; main()",
                "optimize",
                str(ROOT / "examples" / "demo.toml"),
                "--quiet",
                "--run-dir",
                f"{run_dir}/run",
                "--set",
                "playbook.enabled=false",  # neither read nor write the user's playbook
                *[arg for assignment in sets for arg in ("--set", assignment)],
            ],
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the server is reaped by then
        if done.returncode != 0:
            raise SystemExit(f"the demo failed:\n{done.stderr[-3000:]}")
        with sqlite3.connect(f"{run_dir}/run/run.sqlite") as db:
            usages = [
                json.loads(response)["usage"]
                for (response,) in db.execute("SELECT response FROM llm_calls")
            ]
    return {
        "demo_s": wall,
        "demo_cpu_s": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        "demo_calls": len(usages),
        "demo_prompt_tokens": sum(u["input_tokens"] for u in usages),
        "demo_generated_tokens": sum(u["output_tokens"] for u in usages),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompt-tokens", type=int, default=3000)
    parser.add_argument("--no-demo", action="store_true", help="skip the demo runs")
    parser.add_argument("--only", choices=list(CONFIGURATIONS), help="one configuration")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results: dict[str, dict] = {}
    servers: dict[str, dict] = {}  # measured once per distinct server configuration
    load_before = os.getloadavg()[0]
    for name, (extra, env, overrides) in CONFIGURATIONS.items():
        if args.only and name != args.only:
            continue
        saved = dict(os.environ)
        os.environ.update(env)  # inherited by the server and the demo's subprocess
        try:
            server = json.dumps([extra, env])
            if server not in servers:
                servers[server] = asyncio.run(measure_server(extra, args.prompt_tokens))
            results[name] = dict(servers[server])
            if not args.no_demo:
                results[name].update(demo_run(extra, overrides))
        finally:
            os.environ.clear()
            os.environ.update(saved)
    if args.json or args.only:
        print(
            json.dumps(
                {
                    "cores": os.cpu_count(),
                    "current_options": list(TUNING),
                    "previous_demo_overrides": PREVIOUS_DEMO,
                    "load_average": [load_before, os.getloadavg()[0]],
                    **results,
                },
                indent=2,
            )
        )
        return
    prev, cur = results["previous"], results["current"]
    print(
        f"embedded {SHIPPED_LOCAL_MODEL} on {os.cpu_count()} cores, load average "
        f"{load_before:.1f} -> {os.getloadavg()[0]:.1f}; server: {' '.join(TUNING)}, "
        f"OMP_WAIT_POLICY=PASSIVE; previous: {' '.join(CONFIGURATIONS['previous'][0])}, "
        f"demo --set {' --set '.join(PREVIOUS_DEMO)}"
    )
    print(f"{'':28}{'previous':>12}{'current':>12}{'ratio':>9}")
    rows = [
        ("prompt tokens/s", "prompt_tok_s"),
        ("prompt tokens/CPU-s", "prompt_tok_cpu_s"),
        ("generated tokens/s", "gen_tok_s"),
        ("generated tokens/CPU-s", "gen_tok_cpu_s"),
    ]
    for label, key in rows:
        print(f"{label:28}{prev[key]:12.1f}{cur[key]:12.1f}{cur[key] / prev[key]:8.2f}x")
    print(f"{'prefix reuse (time share)':28}{prev['reuse_share']:12.2f}{cur['reuse_share']:12.2f}")
    if "demo_s" not in cur:
        return
    for label, key in [
        ("demo LLM calls", "demo_calls"),
        ("demo prompt tokens", "demo_prompt_tokens"),
        ("demo generated tokens", "demo_generated_tokens"),
    ]:
        print(f"{label:28}{prev[key]:12d}{cur[key]:12d}{cur[key] / max(prev[key], 1):8.2f}x")
    for label, key in [("demo wall s", "demo_s"), ("demo CPU s", "demo_cpu_s")]:
        print(f"{label:28}{prev[key]:12.1f}{cur[key]:12.1f}{prev[key] / cur[key]:8.2f}x less")


if __name__ == "__main__":
    main()
