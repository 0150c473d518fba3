"""The reader of the original system's published Trainium traces (``autocomp-core fidelity trn``),
on a checkout built here with programs of our own: parsed, never run; mapped onto our problems at
the measured shapes; adapted only by the harness's renames and imports."""

from __future__ import annotations

import pytest
from autocomp_core import EvalContext
from autocomp_core.fidelity import FidelityUnsupported

from autocomp_trn.backend import TrnBackend
from autocomp_trn.fidelity import CHAINS, adapt, read_trace
from autocomp_trn.problems.catalog import spec_by_id

BACKEND = TrnBackend({"mode": "emulator", "generation": "trn1"}, {"seeds": 1})

# A published-style program: the kernel named ``test``, no imports (the harness supplied them).
# Our own: y = 3x on one [128, 512] tile.
TRIPLE = """@nki.jit
def test(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=nl.multiply(t, 3.0))
    return out
"""


def trace_text(programs: list[tuple[str, float]]) -> str:
    """A trace file as the original system writes it: the last program outermost."""
    text = "None"
    for code, score in programs:
        text = f"CodeCandidate(parent={text},\nplan=None,\ncode={code!r},\nscore={score!r})"
    return text


def checkout(tmp_path, programs):
    for chain in CHAINS:
        path = tmp_path / chain.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(trace_text(programs))
    return tmp_path


def test_a_trace_is_read_start_program_first():
    assert read_trace(trace_text([("a", 2.5), ("b", 1.25)]), "t.py") == [("a", 2.5), ("b", 1.25)]


def test_a_trace_is_parsed_never_run(tmp_path):
    marker = tmp_path / "ran"
    hostile = f"CodeCandidate(parent=None, code=open({str(marker)!r}, 'w').write('x'), score=1.0)"
    with pytest.raises(FidelityUnsupported, match="literal code and score"):
        read_trace(hostile, "t.py")
    with pytest.raises(FidelityUnsupported, match="expected CodeCandidate"):
        read_trace("__import__('os')", "t.py")
    assert not marker.exists()


def test_adapting_renames_the_kernel_and_adds_only_the_missing_harness_imports():
    code, changes = adapt(TRIPLE, "solution")
    assert "def solution(x):" in code and "def test" not in code
    assert code.startswith("import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n")
    assert changes == "renamed test -> solution; added the harness's imports of nki, nl"
    own = "import numpy as np\nimport neuronxcc.nki.language as nl\n" + TRIPLE.replace(
        "3.0", "np.float32(3)"
    )
    code, changes = adapt(own, "solution")
    assert changes.endswith("imports of nki") and code.count("import numpy") == 1
    assert adapt("def kernel():\n    return nl.nparray\n", "solution") == (
        "import neuronxcc.nki.language as nl\ndef kernel():\n    return nl.nparray\n",
        "added the harness's imports of nl",  # ``nl.nparray`` is no use of ``np``
    )


def test_every_chain_is_read_onto_our_problem_at_the_measured_shape(tmp_path):
    programs = BACKEND.fidelity_programs(checkout(tmp_path, [(TRIPLE, 2.0), (TRIPLE, 0.5)]))
    assert len(programs) == 2 * len(CHAINS)
    assert [p.measured for p in programs[:2]] == [2000.0, 500.0]  # ms published, us modelled
    by_chain = {p.chain: p for p in programs}
    assert by_chain["trn-tutorial/gemm"].problem.id == "tutorial/gemm@full"
    assert by_chain["trn-tutorial/mamba"].problem.id == "tutorial/mamba"  # measured at our shape
    assert [c for c, p in by_chain.items() if p.held_out] == ["trn-advanced/conv1d"]
    assert all("def solution(x)" in p.code and p.adapted.startswith("renamed") for p in programs)
    assert programs[1].source.endswith("2_gemm_trace.py#1") and programs[1].step == 1


def test_the_last_program_is_the_published_final_file_where_there_is_one(tmp_path):
    root = checkout(tmp_path, [(TRIPLE, 2.0), (TRIPLE, 0.5)])
    final = TRIPLE.replace("3.0", "3.0 + 0.0")
    (root / "examples/trn-tutorial/3_mamba_opt.py").write_text(final)
    mamba = [p for p in BACKEND.fidelity_programs(root) if p.chain == "trn-tutorial/mamba"]
    assert "3.0 + 0.0" not in mamba[0].code and "3.0 + 0.0" in mamba[1].code
    assert mamba[1].adapted.startswith("the program of 3_mamba_opt.py; renamed test")
    assert mamba[1].measured == 500.0  # the score is the trace's


def test_a_folder_that_is_not_the_checkout_is_named_in_one_line(tmp_path):
    with pytest.raises(FidelityUnsupported, match=r"no examples/trn-tutorial/2_gemm_trace\.py$"):
        BACKEND.fidelity_programs(tmp_path)


def test_the_measured_shape_is_a_problem_of_its_own():
    full = spec_by_id("tutorial/gemm@full")
    assert [i.shape for i in full.inputs] == [(8192, 4096), (8192, 8192)]
    assert full.outputs == [((4096, 8192), "bfloat16")] and full.full_inputs is None
    problem = BACKEND.load_problem("tutorial/gemm@full")
    assert "[8192, 4096]" in problem.context
    assert BACKEND.metric_lower_bound(problem) > 10 * BACKEND.metric_lower_bound(
        BACKEND.load_problem("tutorial/gemm")
    )
    with pytest.raises(KeyError, match="no other original shape"):
        spec_by_id("tutorial/mamba@full")


@pytest.mark.asyncio
async def test_a_program_of_the_measured_shape_problem_runs_at_that_shape():
    # a kernel written for our smaller checked shape stops on its own assertion, which shows the
    # shape it was given (the assertion ends the trace early: nothing at 8192 is computed)
    code = (
        "import neuronxcc.nki as nki\n\n\n@nki.jit\ndef solution(lhsT, rhs):\n"
        "    assert tuple(lhsT.shape) == (2048, 512), f'got {tuple(lhsT.shape)}'\n"
        "    return lhsT\n"
    )
    gemm_full = BACKEND.load_problem("tutorial/gemm@full")
    result = await BACKEND.evaluate(gemm_full, code, EvalContext(timeout_s=120))
    assert not result.correct and "got (8192, 4096)" in result.feedback, result.feedback
