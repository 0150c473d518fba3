"""The trusted objects' cache (trusted.py): built once, reused by every evaluation of the same
configuration, checked on every use, and out of the candidate's reach."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest
from autocomp_gemmini import evaluate as gem_eval, trusted
from autocomp_gemmini.backend import GemminiBackend
from autocomp_gemmini.catalog import specs
from autocomp_gemmini.config import GemminiConfig
from autocomp_gemmini.elf import symbols, write_symbol

from autocomp_core import EvalContext
from autocomp_core.sandbox import SandboxLimits, isolation_level, private_workdir, run_sandboxed

PROBLEM = "gemm-64x64x64"


@pytest.fixture
def compiles(monkeypatch, tmp_path) -> list[str]:
    """A fresh cache, and the list of the trusted compiles run (the real compiler runs)."""
    monkeypatch.setattr(trusted, "cache_root", lambda: tmp_path / "trusted")
    calls: list[str] = []
    real = trusted.compile_into

    async def counted(cc, spec, *args, **kwargs):
        calls.append(spec.id)
        return await real(cc, spec, *args, **kwargs)

    monkeypatch.setattr(trusted, "compile_into", counted)
    return calls


def evaluate(seed: int, backend: GemminiBackend | None = None):
    backend = backend or GemminiBackend()
    problem = backend.load_problem(PROBLEM)
    return asyncio.run(backend.evaluate(problem, problem.baseline_code, EvalContext(seed=seed)))


def entry_of(hw: GemminiConfig | None = None) -> Path:
    cc = gem_eval.toolchain.clang()
    assert cc is not None
    return trusted.cache_root() / trusted.cache_key(
        cc, specs()[PROBLEM], hw or GemminiConfig(), True
    )


def test_a_second_evaluation_reuses_the_cached_objects(compiles):
    first = evaluate(seed=1)
    assert first.correct, first.feedback
    assert compiles == [PROBLEM]
    entry = entry_of()
    manifest = json.loads((entry / trusted.MANIFEST).read_text())
    assert sorted(manifest) == sorted(trusted.object_names(specs()[PROBLEM]))
    stamps = {p.name: p.stat().st_mtime_ns for p in entry.iterdir()}
    # another seed: other inputs, written into the program, so the same objects serve
    second = evaluate(seed=2)
    assert second.correct, second.feedback
    assert compiles == [PROBLEM]
    assert {p.name: p.stat().st_mtime_ns for p in entry.iterdir()} == stamps
    assert second.verification["seeds"] != first.verification["seeds"]
    # another configuration is another entry
    other = evaluate(seed=1, backend=GemminiBackend(GemminiConfig(pe_dim=8)))
    assert other.correct, other.feedback
    assert compiles == [PROBLEM, PROBLEM]
    assert entry_of(GemminiConfig(pe_dim=8)) != entry


@pytest.mark.parametrize("tamper", ["changed", "removed", "manifest"])
def test_a_tampered_cache_entry_is_detected_and_rebuilt(compiles, tamper):
    assert evaluate(seed=1).correct
    entry = entry_of()
    harness = entry / f"harness_{specs()[PROBLEM].family}.o"
    honest = harness.read_bytes()
    if tamper == "changed":  # e.g. a harness that fills the inputs some other way
        poisoned = bytearray(honest)
        poisoned[len(poisoned) // 2] ^= 0xFF
        harness.write_bytes(bytes(poisoned))
    elif tamper == "removed":
        harness.unlink()
    else:
        (entry / trusted.MANIFEST).write_text("{not json")
    with private_workdir("autocomp-gemmini-test-") as work:
        assert trusted._copy_verified(entry, trusted.object_names(specs()[PROBLEM]), work) is None
    result = evaluate(seed=1)
    assert result.correct, result.feedback
    assert compiles == [PROBLEM, PROBLEM]  # not used: built afresh, and published again
    assert harness.read_bytes() == honest
    manifest = json.loads((entry / trusted.MANIFEST).read_text())
    assert manifest[harness.name] == hashlib.sha256(honest).hexdigest()


def test_the_seed_is_written_into_the_program_once(tmp_path):
    """The linked program holds the evaluation's seed and nonce, where the harness reads them;
    the placeholder is checked, so a second write (or a wrong offset) is refused."""
    backend = GemminiBackend()
    spec, hw = specs()[PROBLEM], backend.hardware
    code, _ = gem_eval.check_source(backend.load_problem(PROBLEM).baseline_code)
    with private_workdir("autocomp-gemmini-test-") as work:
        work.chmod(0o755)
        built = asyncio.run(gem_eval.build(work, spec, code, hw, 0x1_2345_6789, False, 120, 0xABC))
        assert built.ok, built.message
        _, size = symbols(built.elf)["harness_params"]
        assert size == len(gem_eval.PARAMS_PLACEHOLDER)
        params = gem_eval.struct.pack("<QII", 0xABC, 0x2345_6789, 0)
        with pytest.raises(ValueError, match="placeholder"):
            write_symbol(built.elf, "harness_params", gem_eval.PARAMS_PLACEHOLDER, params)
        write_symbol(built.elf, "harness_params", params, params)  # the values are there
        with pytest.raises(ValueError, match="no single"):
            write_symbol(built.elf, "solution", params, params)


def test_sandboxed_programs_cannot_write_the_cache():
    """The real cache dir: a program in the sandbox (as the candidate runs) cannot plant a file."""
    # the namespace levels mount it read-only; "uid" runs the program as another user
    if isolation_level() == "none":
        pytest.skip("isolation 'none': the program may write whatever the user may")
    root = trusted.cache_root()
    root.mkdir(parents=True, exist_ok=True)
    target = root / "planted-by-a-candidate"
    with private_workdir("autocomp-gemmini-test-") as work:
        run = asyncio.run(
            run_sandboxed(
                ["/bin/sh", "-c", f"echo x > '{target}'"],
                cwd=work,
                limits=SandboxLimits(wall_s=30),
            )
        )
    assert not run.ok
    assert not target.exists()
