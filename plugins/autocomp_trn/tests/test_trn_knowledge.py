"""The knowledge pack says only what the emulator implements: the ISA text documents exactly
the names of each emulated module (the current ``nki`` API and the legacy ``neuronxcc.nki``),
and every API name the menus, rules and examples mention exists."""

from __future__ import annotations

import ast
import re

import numpy as np
import pytest
from autocomp_core.contract.backend import KnowledgePack
from trn_testkit import DOUBLE, problem

from autocomp_trn.backend import HERE
from autocomp_trn.emulator import isa_v2, modules
from autocomp_trn.emulator.tracer import Tile
from autocomp_trn.judge import emulate
from autocomp_trn.problems.spec import Input

PACK = HERE / "knowledge"
ISA = (PACK / "isa.md").read_text()
MODULES = modules.build()

#: isa.md heading -> (emulated module, how the text writes its names)
SECTIONS = {
    "nki.language (nl)": ("nki.language", "nl"),
    "nki.isa (nisa)": ("nki.isa", "nisa"),
    "nki.compiler": ("nki.compiler", "nki.compiler"),
    "nki.lnc": ("nki.lnc", "nki.lnc"),
    "Legacy: neuronxcc.nki.isa (nisa)": ("neuronxcc.nki.isa", "nisa"),
}
LEGACY_LANGUAGE = "Legacy: neuronxcc.nki.language (nl)"
NOT_IN_LEGACY = "Not in the legacy API:"


def _section(heading: str) -> str:
    parts = ISA.split(f"\n## {heading}\n")
    assert len(parts) == 2, f"isa.md needs exactly one '## {heading}' section"
    return parts[1].split("\n## ", 1)[0]


def _names(text: str, prefix: str) -> set[str]:
    return set(re.findall(rf"`{re.escape(prefix)}\.([A-Za-z_][A-Za-z_0-9]*)", text))


def _public(module: str) -> set[str]:
    return {n for n in MODULES[module].__dict__ if not n.startswith("_")}


def _removed(module: str) -> set[str]:
    """Names a module refuses with the version that removed them (the text may name them)."""
    return set(MODULES[module].__dict__.get("_removed", {}))


@pytest.mark.parametrize("heading", list(SECTIONS))
def test_each_isa_section_documents_exactly_its_emulated_module(heading):
    module, prefix = SECTIONS[heading]
    documented = _names(_section(heading), prefix)
    emulated = _public(module)
    assert documented - emulated - _removed(module) == set(), f"'{heading}' names these"
    assert emulated - documented == set(), f"emulated in {module}, not documented"


def test_the_legacy_language_section_states_how_it_differs_from_the_current_one():
    text = _section(LEGACY_LANGUAGE)
    line = next(ln for ln in text.splitlines() if ln.startswith(NOT_IN_LEGACY))
    current_only = _names(line, "nl")
    legacy_only = _names(text.replace(line, ""), "nl")
    current = _names(_section("nki.language (nl)"), "nl") - _removed("nki.language")
    assert current_only <= current
    assert (current - current_only) | legacy_only == _public("neuronxcc.nki.language")


def test_the_nki_tensor_methods_documented_exist():
    methods = set(re.findall(r"`t\.([a-z_]+)\(", _section("NkiTensor views")))
    assert len(methods) >= 8
    assert {m for m in methods if not callable(getattr(Tile, m, None))} == set()


def test_the_current_api_comes_first_and_the_legacy_one_is_labelled():
    headings = re.findall(r"^## (.+)$", ISA, re.M)
    assert headings[0] == "nki.language (nl)"
    legacy = [h for h in headings if "neuronxcc" in h]
    assert legacy and all(h.startswith("Legacy:") for h in legacy)
    assert headings.index(legacy[0]) > headings.index("nki.isa (nisa)")


# ---------------------------------------------------------------- menus, rules, examples

PACK_LOADED = KnowledgePack.from_dir(PACK)


def _texts() -> list[tuple[str, str]]:
    """(where, text) for every menu item, rule and example."""
    out = [("menu", m) for m in PACK_LOADED.menu]
    out += [("translation_menu", m) for m in PACK_LOADED.translation_menu]
    for kind in ("general", "planning", "coding"):
        out += [(f"rules.{kind}", r) for r in getattr(PACK_LOADED, f"rules_{kind}")]
    out += [(f"examples/{e.name}", e.text) for e in PACK_LOADED.examples]
    return out


def test_every_api_name_the_pack_mentions_is_emulated():
    retired = set(getattr(isa_v2, "RETIRED", ()))  # present only to say where they went
    current = {"nl": _public("nki.language"), "nisa": _public("nki.isa") - retired}
    legacy = {"nl": _public("neuronxcc.nki.language"), "nisa": _public("neuronxcc.nki.isa")}
    missing = []
    for where, text in _texts():
        api = legacy if "legacy" in text else current
        for prefix, name in re.findall(r"\b(nl|nisa)\.([a-z_][a-z_0-9]*)", text):
            if name not in api[prefix]:
                missing.append(f"{where}: {prefix}.{name}")
    assert missing == []


def test_every_compile_option_the_pack_names_is_accepted():
    from autocomp_trn.emulator import compiler

    named = set()
    for _, text in _texts():
        named |= set(re.findall(r"\b([a-z_]+)=", text)) & set(compiler.OPTIONS)
    assert {"allocation", "scheduling", "prefetch_auto"} <= named


def test_the_example_code_is_python():
    for example in PACK_LOADED.examples:
        blocks = re.findall(r"```python\n(.*?)```", example.text, re.S)
        assert blocks, f"examples/{example.name} has no code"
        for block in blocks:
            ast.parse(block)  # a SyntaxError names the example's line


def test_the_pack_has_the_menus_and_the_compact_architecture():
    assert len(PACK_LOADED.menu) >= 40
    assert len(set(PACK_LOADED.menu)) == len(PACK_LOADED.menu)
    assert any("CompileConfig of the parent" in m for m in PACK_LOADED.menu)
    assert any("current API" in m for m in PACK_LOADED.translation_menu)
    assert 0 < len(PACK_LOADED.architecture_compact) < len(PACK_LOADED.architecture) // 3


# ---------------------------------------------------------------- the examples run

CURRENT = "import numpy as np\nimport nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n"


def _snippet(name: str, indent: str = "    ") -> str:
    """The code blocks of ``examples/<name>.md`` in order, indented into a kernel body."""
    code = re.findall(r"```python\n(.*?)```", (PACK / "examples" / f"{name}.md").read_text(), re.S)
    lines = "".join(code).splitlines(True)
    return "".join(indent + line if line.strip() else line for line in lines)


def _kernel(args: str, prelude: str, name: str, epilogue: str) -> str:
    body = "".join(f"    {ln}\n" for ln in prelude.strip().splitlines())
    tail = "".join(f"    {ln}\n" for ln in epilogue.strip().splitlines())
    return f"{CURRENT}@nki.jit\ndef solution({args}):\n{body}{_snippet(name)}{tail}"


def _gelu(x):
    from math import erf

    return 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))


def _softmax_rows(s):
    return np.exp(s - s.max(axis=1, keepdims=True))


EXAMPLES = {
    "psum_accumulation": (
        problem(
            [
                Input("lhsT", (256, 512), "bfloat16", "uniform"),
                Input("rhs", (256, 512), "bfloat16", "uniform"),
            ],
            [((512, 512), "float32")],
            lambda lhsT, rhs: (lhsT.T @ rhs,),
            atol=1e-3,
            rtol=1e-3,
        ),
        "lhsT, rhs",
        """
K, M = lhsT.shape
N = rhs.shape[1]
result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
m0 = 0
""",
        "return result",
        "trn2",
    ),
    "fused_activation": (
        problem(
            [Input("x", (128, 512)), Input("b", (128, 1))],
            [((128, 512), "bfloat16"), ((128, 1), "float32")],
            lambda x, b: (np.exp(x * 0.125 + b), np.exp(x * 0.125 + b).sum(axis=1, keepdims=True)),
            atol=2e-2,
            rtol=2e-2,
        ),
        "x, b",
        """
n = x.shape[1]
scores = nl.ndarray((128, n), dtype=nl.float32, buffer=nl.sbuf)
nisa.dma_copy(dst=scores, src=x)
neg_row_max = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
nisa.dma_copy(dst=neg_row_max, src=b)
""",
        """
out = nl.ndarray((128, n), dtype=nl.bfloat16, buffer=nl.shared_hbm)
nisa.dma_copy(dst=out, src=probs)
sums = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
nisa.dma_copy(dst=sums, src=row_sum)
return out, sums
""",
        "trn2",
    ),
    "wide_instructions": (
        problem(
            [Input("x", (128, 514)), Input("w", (128, 3))],
            [((128, 512), "float32")],
            lambda x, w: (sum(x[:, j : j + 512] * w[:, j : j + 1] for j in range(3)),),
            atol=1e-4,
            rtol=1e-4,
        ),
        "x, w",
        """
W = 512
row = nl.ndarray((128, W + 2), dtype=nl.float32, buffer=nl.sbuf)
nisa.dma_copy(dst=row, src=x)
taps = nl.ndarray((128, 3), dtype=nl.float32, buffer=nl.sbuf)
nisa.dma_copy(dst=taps, src=w)
""",
        """
out = nl.ndarray((128, W), dtype=nl.float32, buffer=nl.shared_hbm)
nisa.dma_copy(dst=out, src=acc)
return out
""",
        "trn2",
    ),
    "flash_softmax": (
        problem(
            [
                Input("s", (128, 512), "float32", "uniform"),
                Input("v", (512, 64), "bfloat16", "uniform"),
            ],
            [((128, 64), "float32"), ((128, 1), "float32")],
            lambda s, v: (_softmax_rows(s) @ v, _softmax_rows(s).sum(axis=1, keepdims=True)),
            atol=3e-2,
            rtol=3e-2,
        ),
        "s, v",
        """
seq, d = v.shape
scores = nl.ndarray((128, seq), dtype=nl.float32, buffer=nl.sbuf)
nisa.dma_copy(dst=scores, src=s)
v_tiles = []
for j in range(seq // 128):
    v_tiles.append(nl.ndarray((128, d), dtype=nl.bfloat16, buffer=nl.sbuf))
    nisa.dma_copy(dst=v_tiles[j], src=v[j * 128:(j + 1) * 128, :])
""",
        """
res = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.sbuf)
nisa.tensor_copy(dst=res, src=out)
o = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.shared_hbm)
nisa.dma_copy(dst=o, src=res)
sums = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
nisa.dma_copy(dst=sums, src=row_sum)
return o, sums
""",
        "trn2",
    ),
    "dma_transpose": (
        problem(
            [Input("x", (256, 128), "bfloat16", "uniform")],
            [((128, 256), "bfloat16")],
            lambda x: (x.T,),
        ),
        "x",
        "N = x.shape[0]",
        """
out = nl.ndarray((128, N), dtype=nl.bfloat16, buffer=nl.shared_hbm)
nisa.dma_copy(dst=out, src=xT)
return out
""",
        "trn2",
    ),
    "tensor_views": (
        problem(
            [Input("x", (512, 512), "bfloat16", "uniform")],
            [((128, 512), "bfloat16"), ((128, 4, 256), "bfloat16")],
            lambda x: (
                np.exp(x[256:384]),
                np.exp(x.reshape(4, 128, 512).transpose(1, 0, 2)[:, :, :256]),
            ),
            atol=2e-2,
            rtol=2e-2,
        ),
        "x",
        "",
        """
o1 = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.shared_hbm)
nisa.dma_copy(dst=o1, src=third)
o2 = nl.ndarray((128, 4, 256), dtype=nl.bfloat16, buffer=nl.shared_hbm)
nisa.dma_copy(dst=o2, src=left)
return o1, o2
""",
        "trn2",
    ),
    "trn3_fused_ops": (
        problem(
            [
                Input("xs", (128, 512), "float32", "uniform"),
                Input("m", (128, 1), "float32", "uniform"),
                Input("wT", (128, 128), "bfloat16", "uniform"),
                Input("xm", (128, 512), "bfloat16", "uniform"),
            ],
            [
                ((128, 512), "float32"),
                ((128, 512), "float32"),
                ((128, 1), "float32"),
                ((128, 512), "float32"),
            ],
            lambda xs, m, wT, xm: (
                _gelu(xs * 0.5 + 0.25),
                np.exp(xs - m),
                np.exp(xs - m).sum(axis=1, keepdims=True),
                wT.T @ xm,
            ),
            atol=3e-2,
            rtol=3e-2,
        ),
        "xs, m, wT, xm",
        """
x = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
nisa.dma_copy(dst=x, src=xs)
scores = x
row_max = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
nisa.dma_copy(dst=row_max, src=m)
s, b = 0.5, 0.25
y = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
p = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
wT_tile = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
nisa.dma_copy(dst=wT_tile, src=wT)
x_tile = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
nisa.dma_copy(dst=x_tile, src=xm)
""",
        """
outs = []
for tile in (y, p, row_sum):
    o = nl.ndarray(tile.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=o, src=tile)
    outs.append(o)
mm = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
nisa.tensor_copy(dst=mm, src=acc)
o = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
nisa.dma_copy(dst=o, src=mm)
return outs[0], outs[1], outs[2], o
""",
        "trn3",
    ),
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_each_example_runs_correctly_in_a_kernel(name):
    spec, args, prelude, epilogue, generation = EXAMPLES[name]
    result = emulate(spec, _kernel(args, prelude, name, epilogue), generation=generation)
    assert result["status"] == "ok", result.get("message")


def test_the_compile_config_example_decorates_a_kernel():
    text = (PACK / "examples" / "compile_config.md").read_text()
    code = re.findall(r"```python\n(.*?)```", text, re.S)[0]
    body = """
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=out, src=t)
    return out
"""
    kernel = code.replace("def solution(x, w):", "def solution(x):").replace(
        "    ...  # the parent's body, unchanged\n", body
    )
    assert body in kernel
    assert emulate(DOUBLE, kernel, generation="trn2")["status"] == "ok"


# ---------------------------------------------------------------- the preset tables


def _row(table: str, label: str) -> list[str]:
    line = next(ln for ln in table.splitlines() if ln.startswith(f"| {label}"))
    return [c.strip() for c in line.strip("|").split("|")[1:]]


def _preset_columns(table: str) -> list[str]:
    header = table.splitlines()[0]
    return re.findall(r"trn[0-9]", header)


def _check_table(table: str, sbuf: str, clocks: str, hbm: str) -> None:
    from autocomp_trn.emulator.hardware import GENERATIONS

    names = _preset_columns(table)
    assert sorted(names) == sorted(GENERATIONS)
    for name, s, c, h in zip(names, _row(table, sbuf), _row(table, clocks), _row(table, hbm)):
        gen = GENERATIONS[name]
        assert s.startswith(f"{gen.sbuf_bytes_per_partition // 1024} KiB"), (name, s)
        ghz = " / ".join(f"{f:g}" for f in (gen.pe_ghz, gen.dve_ghz, gen.act_ghz, gen.pool_ghz))
        assert c.startswith(ghz), (name, c)
        assert f"{gen.hbm_gbs:g}" in h, (name, h)


def test_the_preset_tables_of_the_docs_match_the_presets():
    docs = (HERE.parents[2] / "docs" / "trainium.md").read_text()
    table = docs.split("\n| |", 1)[1].split("\n\n", 1)[0]
    _check_table("| |" + table, "SBUF per partition", "TensorE / VectorE", "HBM bandwidth")
    readme = (HERE.parent / "README.md").read_text()
    table = readme.split("\n| preset |", 1)[1].split("\n\n", 1)[0]
    # the README lists a preset per row: turn it into the docs' column form
    body = [ln for ln in table.splitlines()[2:] if ln.startswith("| `trn")]
    cells = [[c.strip() for c in ln.strip("|").split("|")] for ln in body]
    rows = [
        "| | " + " | ".join(c[0].strip("`").split("`")[0] for c in cells) + " |",
        "| SBUF | " + " | ".join(c[2] for c in cells) + " |",
        "| clocks | " + " | ".join(c[4] for c in cells) + " |",
        "| HBM | " + " | ".join(c[5] for c in cells) + " |",
    ]
    _check_table("\n".join(rows), "SBUF", "clocks", "HBM")


def test_the_architecture_text_gives_each_presets_sbuf_and_clocks():
    from autocomp_trn.emulator.hardware import GENERATIONS

    text = PACK_LOADED.architecture
    for gen in GENERATIONS.values():
        assert f"{gen.sbuf_bytes_per_partition // 1024} KiB" in text, gen.name
        for ghz in (gen.pe_ghz, gen.dve_ghz, gen.act_ghz):
            assert f"{ghz:g} GHz" in text, (gen.name, ghz)
    for gen in (GENERATIONS["trn2"], GENERATIONS["trn3"]):
        assert f"{gen.sbuf_bytes_per_partition // 1024} KiB" in PACK_LOADED.architecture_compact
