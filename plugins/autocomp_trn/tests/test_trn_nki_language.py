"""The current NKI API (0.8) as the emulator provides it: the module tree, nki.language's loops,
views, dtypes and constants, nki.compiler's CompileConfig and nki.lnc. Kernels run through the
real tracing process code and the trusted replay (``judge.emulate``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from trn_testkit import DOUBLE, problem

from autocomp_trn.emulator import compiler, modules
from autocomp_trn.emulator.indexing import NkiError
from autocomp_trn.judge import emulate
from autocomp_trn.problems.spec import Input
from autocomp_trn.runtime.trace_main import trace_source

HEADER = "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n"

#: y = 2x through the current API, with the loop and config spots the tests fill in
DOUBLE_V2 = (
    HEADER
    + """
@nki.jit{jit}
def solution(x):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(t, x)
    r = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)

    def body(i):
        nisa.tensor_scalar(r[:, i * 256 : (i + 1) * 256], t[:, i * 256 : (i + 1) * 256], nl.multiply, 2.0)

{loop}
    nisa.dma_copy(out, r)
    return out
"""
)
FORI = "    nl.fori_loop(0, 2, body)"


def v2(loop: str = FORI, jit: str = "") -> str:
    return DOUBLE_V2.format(loop=loop, jit=jit)


def trace_of(source: str, generation: str = "trn2") -> dict:
    with modules.installed(generation):  # trace_source installs the NKI modules for good
        status, text = trace_source(
            source, "solution", [["x", [128, 512], "float32"]], {}, generation, 192 * 1024, 100_000
        )
    assert status["status"] == "ok", status
    return json.loads(text)


# ---------------------------------------------------------------- the module tree


def test_the_current_and_the_legacy_api_are_separate_module_trees():
    built = modules.build()
    assert {"nki.compiler", "nki.lnc", "nki.typing"} <= set(built)
    assert built["nki.language"] is not built["neuronxcc.nki.language"]
    assert built["nki.language"].fori_loop is not None
    with pytest.raises(NkiError, match=r"legacy API"):
        built["neuronxcc.nki.language"].fori_loop  # noqa: B018 (the attribute access is the test)


def test_a_name_removed_from_the_current_api_says_when_and_what_replaces_it():
    with pytest.raises(NkiError, match=r"dynamic_range was removed in NKI 0\.7: use nl\.fori_loop"):
        modules.build()["nki.language"].dynamic_range  # noqa: B018
    result = emulate(DOUBLE, v2("    for i in nl.dynamic_range(2):\n        body(i)"))
    assert result["code"] == "err_removed_api"


# ---------------------------------------------------------------- loops


def test_fori_loop_runs_its_body_per_iteration_as_one_compiled_device_loop():
    assert emulate(DOUBLE, v2(), generation="trn2")["status"] == "ok"
    events = trace_of(v2())["events"]
    loops = [e for e in events if e[0] == "loop"]
    assert [(e[1], e[2]) for e in loops] == [("fori", 2)]
    unrolled = trace_of(v2("    nl.fori_loop(0, 2, body, unroll=True)"))["events"]
    assert [e[1] for e in unrolled if e[0] == "loop"] == ["static"]


def test_the_deprecated_range_iterators_are_python_ranges_in_the_current_api():
    source = v2("    for i in nl.affine_range(2):\n        body(i)")
    assert emulate(DOUBLE, source, generation="trn2")["status"] == "ok"
    assert not [e for e in trace_of(source)["events"] if e[0] == "loop"]


def test_while_loop_runs_an_integer_condition_and_refuses_a_device_one():
    counted = v2("    nl.while_loop(2, lambda r: (body(2 - r), r - 1)[1])")
    assert emulate(DOUBLE, counted, generation="trn2")["status"] == "ok"
    loops = [e for e in trace_of(counted)["events"] if e[0] == "loop"]
    assert [(e[1], e[2]) for e in loops] == [("while", 2)]
    on_device = v2("    nl.while_loop(t, body)")
    result = emulate(DOUBLE, on_device, generation="trn2")
    assert (
        result["code"] == "err_unsupported_api" and "condition held on device" in result["message"]
    )


def test_if_else_resolves_a_python_condition_while_tracing_and_refuses_a_device_one():
    half = "    nl.if_else({cond}, lambda: body(0), lambda: body(1))\n    nl.if_else(1, lambda: body(1))"
    assert emulate(DOUBLE, v2(half.format(cond="True")), generation="trn2")["status"] == "ok"
    assert not [e for e in trace_of(v2(half.format(cond="0")))["events"] if e[0] == "loop"]
    # cond 0 runs body(1) twice and never body(0): half the output stays unwritten
    assert emulate(DOUBLE, v2(half.format(cond="0")), generation="trn2")["status"] == "wrong_answer"
    result = emulate(DOUBLE, v2(half.format(cond="t")), generation="trn2")
    assert result["code"] == "err_unsupported_api" and "held on device" in result["message"]


def test_the_experimental_softmax_wrapper_computes_softmax_over_the_free_axis():
    def reference(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True),)

    spec = problem([Input("x", (128, 512))], [((128, 512), "float32")], reference, 1e-6, 1e-4)
    source = (
        HEADER
        + """
@nki.jit
def solution(x):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.softmax(nl.load(x), axis=1))
    return out
"""
    )
    assert emulate(spec, source, generation="trn2")["status"] == "ok"
    exp_only = source.replace("nl.softmax(nl.load(x), axis=1)", "nl.exp(nl.load(x))")
    assert emulate(spec, exp_only, generation="trn2")["status"] == "wrong_answer"


# ---------------------------------------------------------------- NkiTensor views

PERMUTED = problem(
    [Input("x", (128, 512))],
    [((128, 512), "float32")],
    lambda x: (x.reshape(128, 2, 256).transpose(0, 2, 1).reshape(128, 512),),
)


def test_view_methods_address_the_elements_the_documentation_says():
    source = (
        HEADER
        + """
@nki.jit
def solution(x):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(t, x)
    r = nl.ndarray((128, 256, 2), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(r, t.reshape_dim(1, (2, 256)).permute(0, 2, 1))
    nisa.dma_copy(out, r.flatten_dims(1, 2))
    return out
"""
    )
    assert emulate(PERMUTED, source, generation="trn2")["status"] == "ok"
    # the same through rearrange, and a wrong order gives a wrong answer (the test can fail)
    same = source.replace(".permute(0, 2, 1)", '.rearrange("p a b -> p b a")')
    assert emulate(PERMUTED, same, generation="trn2")["status"] == "ok"
    unpermuted = source.replace(".permute(0, 2, 1)", ".permute(0, 1, 2)").replace(
        "(128, 256, 2)", "(128, 2, 256)"
    )
    assert emulate(PERMUTED, unpermuted, generation="trn2")["status"] == "wrong_answer"


def test_slice_select_broadcast_expand_and_squeeze_shape_their_views():
    with modules.installed("trn2"):
        import nki.language as nl  # the emulated module

        from autocomp_trn.emulator.tracer import CURRENT, Tracer

        CURRENT.append(Tracer(current=True))
        try:
            t = nl.ndarray((128, 4, 64), dtype=nl.float32, buffer=nl.sbuf)
            assert t.slice(2, 0, 64, 2).shape == (128, 4, 32)
            assert t.select(1, 3).shape == (128, 64)
            one = t.slice(1, 0, 1)
            assert one.broadcast(1, 8).shape == (128, 8, 64)
            assert one.squeeze_dim(1).shape == (128, 64)
            assert t.expand_dim(1).shape == (128, 1, 4, 64)
            for view in (
                lambda: t.select(0, 0),
                lambda: t.permute(1, 0, 2),
                lambda: t.squeeze_dim(0),
            ):
                with pytest.raises(NkiError, match="partition dimension"):
                    view()
            with pytest.raises(NkiError, match="element count"):
                t.reshape_dim(1, (3, 2))
        finally:
            CURRENT.pop()


# ---------------------------------------------------------------- dtypes and constants


def test_tile_size_is_byte_aware_and_follows_the_generation():
    with modules.installed("trn2", sbuf_bytes=192 * 1024):
        import nki.language as nl

        ts = nl.tile_size
        assert (ts.psum_bank_fmax, ts.psum_bank_fmax_bytes, ts.psum_num_banks) == (512, 2048, 8)
        assert ts.sbuf_fmax_bytes == 192 * 1024 and ts.sbuf_fmax == 48 * 1024
        assert ts.sbuf_size_bytes == 128 * 192 * 1024
    with modules.installed("trn3", sbuf_bytes=256 * 1024):
        import nki.language as nl

        assert nl.tile_size.sbuf_fmax_bytes == 256 * 1024


def test_the_ocp_fp8_formats_round_as_ml_dtypes_does():
    import ml_dtypes

    def through(dtype, dist="normal"):
        return problem(
            [Input("x", (128, 512), dist=dist)],
            [((128, 512), "float32")],
            lambda x: (x.astype(np.float32).astype(dtype).astype(np.float64),),
            atol=1e-12,  # bit-exact in effect (a zero tolerance divides 0 by 0 in the check)
            rtol=1e-6,
        )

    source = (
        HEADER
        + """
@nki.jit
def solution(x):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(t, x)
    q = nl.ndarray((128, 512), dtype=nl.FMT, buffer=nl.sbuf)
    nisa.tensor_copy(q, t)
    r = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(r, q)
    nisa.dma_copy(out, r)
    return out
"""
    )
    # e8m0 holds unsigned powers of two (a negative value is NaN): positive inputs for it
    for fmt, dist in (("float8_e4m3fn", "normal"), ("float8_e8m0fnu", "positive")):
        spec = through(getattr(ml_dtypes, fmt), dist)
        assert emulate(spec, source.replace("FMT", fmt), generation="trn2")["status"] == "ok", fmt
    wrong = through(ml_dtypes.float8_e5m2)  # another format's rounding is a wrong answer
    assert emulate(wrong, source.replace("FMT", "float8_e4m3fn"), generation="trn2")["status"] == (
        "wrong_answer"
    )


# ---------------------------------------------------------------- nki.compiler


def test_a_compile_config_is_recorded_with_only_the_options_the_kernel_set():
    jit = (
        "(compile_config=nki.compiler.CompileConfig(allocation=nki.compiler.Allocation.LINEAR, "
        "scheduling=True, opt_level=nki.compiler.OptLevel.O2, prefetch_auto=True))"
    )
    trace = trace_of(v2(jit=jit))
    assert trace["compile_config"] == {
        "allocation": "linear",
        "opt_level": "o2",
        "prefetch_auto": True,
        "scheduling": True,
    }
    assert "compile_config" not in trace_of(v2())
    unset = "(compile_config=nki.compiler.CompileConfig(allocation=None, opt_level=None))"
    assert trace_of(v2(jit=unset))["compile_config"] == {}  # None is the default: not set
    assert emulate(DOUBLE, v2(jit=jit), generation="trn2")["status"] == "ok"


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ("scheduling=True", "scheduling=True needs an allocation"),
        (
            "scheduling=True, allocation=Allocation.COLORING",
            "scheduling=True needs allocation=Allocation.LINEAR, got allocation=Allocation.COLORING",
        ),
        ("prefetch_auto=True", "prefetch_auto acts only when NKI allocates"),
        (
            "allocation=Allocation.LINEAR, engine_balancing=True",
            "engine_balancing acts only when NKI schedules",
        ),
        ("allocation='linear'", "allocation must be an nki.compiler.Allocation"),
        ("allocation=Allocation.LINEAR, opt_level=2", "opt_level must be an nki.compiler.OptLevel"),
        ("register_load_reuse=True", "does not model it"),
        ("no_such_option=True", "unexpected option 'no_such_option'"),
    ],
)
def test_the_documented_configuration_errors_are_raised_at_decoration(options, words):
    source = "from nki.compiler import Allocation, CompileConfig, OptLevel\n" + v2(
        jit=f"(compile_config=CompileConfig({options}))"
    )
    result = emulate(DOUBLE, source, generation="trn2")
    assert result["status"] == "compile_error" and result["code"] == "err_compile_config"
    assert words in result["message"]


def test_a_recorded_config_is_validated_from_scratch():
    ok = {"allocation": "linear", "scheduling": True, "engine_balancing": True}
    assert compiler.validate_recorded(ok)["allocation"] is compiler.Allocation.LINEAR
    for forged, words in (
        ({"scheduling": True}, "scheduling=True needs an allocation"),
        ({"allocation": "fast"}, "is not one of"),
        ({"allocation": "linear", "prefetch_auto": 1}, "must be True or False"),
        ({"turbo": True}, "unexpected option"),
        (["allocation"], "JSON object"),
    ):
        with pytest.raises(compiler.CompileConfigError, match=words):
            compiler.validate_recorded(forged)


def test_jit_refuses_platform_target_a_non_config_and_a_config_on_an_inner_kernel():
    for jit, words in (
        ('(platform_target="trn2")', "platform_target"),
        ("(compile_config={'allocation': 'linear'})", "must be an nki.compiler.CompileConfig"),
    ):
        result = emulate(DOUBLE, v2(jit=jit), generation="trn2")
        assert result["status"] == "compile_error" and words in result["message"], result
    nested = (
        HEADER
        + """
@nki.jit(compile_config=nki.compiler.CompileConfig(allocation=nki.compiler.Allocation.LINEAR))
def inner(t):
    nisa.tensor_scalar(t, t, nl.multiply, 2.0)


@nki.jit
def solution(x):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(t, x)
    inner(t)
    nisa.dma_copy(out, t)
    return out
"""
    )
    result = emulate(DOUBLE, nested, generation="trn2")
    assert "called from inside another kernel but sets a compile config" in result["message"]
    assert emulate(DOUBLE, nested.replace("(compile_config=", "  # ("), generation="trn2")[
        "status"
    ] == ("ok")


# ---------------------------------------------------------------- nki.lnc and the SPMD grid


def test_lnc_on_one_core_barrier_waits_for_nothing_and_sendrecv_is_refused():
    barrier = v2(FORI + "\n    nki.lnc.core_barrier(out, (0, 1))")
    assert emulate(DOUBLE, barrier, generation="trn2")["status"] == "ok"
    send = v2(FORI + "\n    nki.lnc.sendrecv(r, r)")
    result = emulate(DOUBLE, send, generation="trn2")
    assert result["code"] == "err_unsupported_api" and "LNC degree 2" in result["message"]
    grid = v2(FORI + "\n    assert nl.program_id(0) == 0 and nl.num_programs() == 1")
    assert emulate(DOUBLE, grid, generation="trn2")["status"] == "ok"


# ---------------------------------------------------------------- the coverage table

COVERAGE = Path(__file__).resolve().parents[3] / "docs" / "nki-coverage.md"
PRESENT = {"emulated", "deprecated", "refused"}
ABSENT = {"not emulated", "removed"}


def _tables() -> dict[str, dict[str, str]]:
    """Each table of the coverage page, by its heading: name -> status."""
    tables: dict[str, dict[str, str]] = {}
    heading = ""
    for line in COVERAGE.read_text().splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip().strip("`").split("`")[0].strip()
        elif line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            tables.setdefault(heading, {})[cells[0].strip("`")] = cells[1]
    return tables


def _public(obj) -> set[str]:
    return {n for n in vars(obj) if not n.startswith("_")}


def _split(table: dict[str, str]) -> tuple[set[str], set[str]]:
    assert set(table.values()) <= PRESENT | ABSENT, set(table.values())
    return (
        {n for n, s in table.items() if s in PRESENT},
        {n for n, s in table.items() if s in ABSENT},
    )


def test_the_coverage_table_matches_the_emulated_modules():
    from autocomp_trn.emulator.language import current

    tables = _tables()
    built = modules.build()
    for name in ("nki", "nki.language", "nki.isa", "nki.typing", "nki.compiler", "nki.lnc"):
        present, absent = _split(tables[name])
        assert present == _public(built[name]), name  # every emulated name listed, and no other
        for missing in absent:
            with pytest.raises(NkiError):
                getattr(built[name], missing)
    methods, no_methods = _split(tables["NkiTensor"])
    assert all(callable(getattr(current.NkiTensor, m, None)) for m in methods)
    assert not any(hasattr(current.NkiTensor, m) for m in no_methods)
    sizes, no_sizes = _split(tables["tile_size"])
    assert sizes == {n for n in dir(current.tile_size) if not n.startswith("_")} - {"set_sbuf"}
    assert not any(hasattr(current.tile_size, n) for n in no_sizes)
    options, no_options = _split(tables["CompileConfig"])
    assert options == set(compiler.OPTIONS) and no_options == set(compiler.NOT_EMULATED)
