"""Prompt size with and without run-time context selection, side by side, per pack.

For each pack (the installed plugins' own, one built here by ``build-pack`` from the
Gemmini plugin's Markdown, and any ``--pack DIR``), the first plan prompt of a problem is
built twice: with the whole ISA and every example, and with selection forced on
(thresholds 0, fine-grained). The selecting LLM is a stand-in that answers with the
items whose listing line shares an identifier (a word of 4+ characters with a letter and
a digit or underscore, or a call like ``vle32``) with the problem's program: "keep the
documentation of what the program uses". Printed per pack: ISA and example characters
kept, the plan prompt's characters both ways and their ratio.

Usage: python benchmarks/context_selection.py [--pack DIR --backend NAME --problem ID]
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests" / "packbuilder")]

import anyio  # noqa: E402

from autocomp_core.config import PromptConfig, SearchConfig, TranslationConfig  # noqa: E402
from autocomp_core.contract.packs import read_pack  # noqa: E402
from autocomp_core.contract.plugins import make_backend  # noqa: E402
from autocomp_core.engine.context import ContextSelector, isa_sections  # noqa: E402
from autocomp_core.engine.prompting import PromptBuilder, system_prompt  # noqa: E402
from autocomp_core.engine.translation import Translation  # noqa: E402
from autocomp_core.ledger.store import Candidate  # noqa: E402
from autocomp_core.llm.settings import LLMSettings  # noqa: E402
from autocomp_core.llm.types import Prompt  # noqa: E402
from autocomp_core.packbuilder.builder import BuildOptions, PackBuilder  # noqa: E402
from autocomp_core.testing.llm_server import LLMTestServer  # noqa: E402

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")
FORCED = PromptConfig(isa_select_above_chars=0, examples_select_above_chars=0, fine_grained=True)


def identifiers(text: str) -> set[str]:
    return {w.lower() for w in IDENTIFIER.findall(text) if "_" in w or any(c.isdigit() for c in w)}


def keep_what_the_program_uses(program: str):
    used = identifiers(program)

    async def ask(prompt: Prompt, slot: str) -> str:
        listing = prompt.dynamic.split("\n\n")
        lines = [ln for block in listing for ln in block.splitlines() if re.match(r"\d+\. ", ln)]
        keep = [ln.split(".", 1)[0] for ln in lines if identifiers(ln) & used]
        return ", ".join(keep)

    return ask


def plan_prompt_chars(backend, problem, pack, isa_sections="all") -> int:
    builder = PromptBuilder(
        backend,
        problem,
        pack,
        SearchConfig(menu_keep_probability=1.0),
        1,
        Translation.of(TranslationConfig()),
        isa_sections=isa_sections,
    )
    root = Candidate(
        id="root", iteration=0, parents=[], origin="root", code=problem.baseline_code, score=1000.0
    )
    prompt = builder.plan([root], random.Random(0), 1, False)
    return len(prompt.system) + len(prompt.static) + len(prompt.dynamic)


async def measure(name: str, backend, problem, pack) -> None:
    selector = ContextSelector(
        pack,
        problem,
        FORCED,
        system_prompt(backend),
        backend.language,
        keep_what_the_program_uses(problem.baseline_code),
    )
    narrowed, record = await selector.select()
    before = plan_prompt_chars(backend, problem, pack)
    after = plan_prompt_chars(backend, problem, narrowed, isa_sections(record))
    ex_before = sum(len(e.text) for e in pack.examples)
    ex_after = sum(len(e.text) for e in narrowed.examples)
    print(
        f"{name:<22} {problem.id:<24} {len(pack.isa):>7} {len(narrowed.isa):>7} "
        f"{ex_before:>7} {ex_after:>7} {before:>8} {after:>8} {before / after:>6.2f}x"
    )


async def build_gemmini_pack(out: Path) -> Path:
    from pack_llm import reply

    server = LLMTestServer(lambda req: reply(req.prompt)).start_in_thread()
    try:
        await PackBuilder(
            BuildOptions(
                sources=[
                    str(ROOT / "plugins" / "autocomp_gemmini" / "autocomp_gemmini" / "knowledge")
                ],
                out=out,
                model=f"openai-compatible@{server.openai_base_url}::scripted",
                target="Gemmini",
                llm=LLMSettings(max_retries=0),
                quiet=True,
            )
        ).build()
    finally:
        server.stop_thread()
    return out


async def main(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="context-selection-"))
    try:
        built = await build_gemmini_pack(tmp / "gemmini-built")
        cases = [
            ("gemmini (plugin)", "gemmini", None, None),
            ("gemmini (build-pack)", "gemmini", None, built),
            ("rvv (plugin)", "rvv", None, None),
            ("cuda (plugin)", "cuda", None, None),
        ]
        if args.pack:
            cases.append(
                (f"{Path(args.pack).name} (--pack)", args.backend, args.problem, Path(args.pack))
            )
        print(
            f"{'pack':<22} {'problem':<24} {'ISA':>7} {'kept':>7} {'examples':>7} {'kept':>7} "
            f"{'prompt':>8} {'selected':>8} {'ratio':>7}"
        )
        for name, backend_name, problem_id, folder in cases:
            backend = make_backend(backend_name, {}, {})
            problem = backend.load_problem(problem_id) if problem_id else backend.problems()[0]
            pack = read_pack(folder) if folder else backend.knowledge(problem)
            await measure(name, backend, problem, pack)
        print(
            "\nISA/examples/prompt sizes in characters; prompt = the first plan prompt "
            "(system + static + dynamic). The selecting LLM is the stand-in described above."
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pack", help="another pack folder to measure")
    parser.add_argument("--backend", default="gemmini", help="backend of --pack")
    parser.add_argument("--problem", help="problem of --pack (default: the backend's first)")
    anyio.run(main, parser.parse_args())
