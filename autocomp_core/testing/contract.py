"""Checks that a backend keeps the contract of ``autocomp_core.Backend``, for plugin tests.

    from autocomp_core.testing import check_backend

    async def test_contract():
        await check_backend(MyBackend())

Each failed check raises ``AssertionError`` with a sentence naming what is wrong. With
``baseline=True`` every problem's baseline is also evaluated (through the sandbox, so
this is as slow as the backend).
"""

from __future__ import annotations

import pydantic

from ..contract.backend import Backend, Capability, EvalContext, KnowledgePack, Problem
from ..contract.resources import local_slots

NO_SUCH_KEY = "no_such_key_autocomp_contract_check"


async def check_backend(backend: Backend, *, baseline: bool = False) -> None:
    """Check the declarations, problems, knowledge, resources, lifecycle and the
    evaluation contract of one backend instance."""
    cls = type(backend)
    name = f"backend {getattr(cls, 'name', cls.__name__)!r}"
    assert getattr(cls, "name", ""), f"{cls.__name__} needs a class attribute `name`"
    assert cls.file_extension.startswith("."), f"{name}: file_extension must start with '.'"
    assert cls.metric_unit, f"{name}: metric_unit is empty (cycles, ms, ...)"
    assert set(cls.capabilities) <= set(Capability), f"{name}: unknown capabilities"
    for model, section in (
        (cls.hardware_config_type, "hardware"),
        (cls.options_type, "backend_options"),
    ):
        try:
            model.model_validate({NO_SUCH_KEY: 1})
        except pydantic.ValidationError:
            pass
        else:
            raise AssertionError(
                f"{name}: [{section}] accepts unknown keys (forbid extra "
                "keys, as HardwareConfig and BackendOptions do)"
            )

    problems = backend.problems()
    assert problems, f"{name}: problems() is empty"
    ids = [p.id for p in problems]
    assert len(set(ids)) == len(ids), f"{name}: problem ids repeat"
    for problem in problems:
        assert backend.load_problem(problem.id).id == problem.id, (
            f"{name}: load_problem({problem.id!r}) returns another problem"
        )
        assert problem.baseline_code.strip(), f"{name}: problem {problem.id} has no baseline"
        pack = backend.knowledge(problem)
        assert isinstance(pack, KnowledgePack), f"{name}: knowledge() must return a KnowledgePack"
        assert pack.menu, f"{name}: the knowledge pack of {problem.id} has no optimization menu"
        bound = backend.metric_lower_bound(problem)
        assert bound is None or bound > 0, f"{name}: the lower bound of {problem.id} is {bound}"

    assert local_slots(backend.resources(), {"cpus": 1, "memory_mb": 1}) >= 1

    async with backend as entered:
        assert entered is backend, f"{name}: __aenter__ must return the backend itself"
        unknown = Problem(id=NO_SUCH_KEY, description="", baseline_code="")
        try:
            result = await backend.evaluate(unknown, "", EvalContext(timeout_s=30))
        except Exception:  # what the contract asks: the engine records it as INFRA_ERROR
            pass
        else:
            raise AssertionError(
                f"{name}: evaluate() of a problem it does not know returned "
                f"{result.failure} instead of raising; let the engine turn "
                "the evaluator's own failures into INFRA_ERROR"
            )
        if baseline:
            for problem in problems:
                result = await backend.evaluate(problem, problem.baseline_code, EvalContext())
                assert result.correct, (
                    f"{name}: the baseline of {problem.id} fails: "
                    f"{result.failure} {result.feedback[:500]}"
                )
                bound = backend.metric_lower_bound(problem)
                assert bound is None or result.score >= bound, (
                    f"{name}: the baseline of {problem.id} beats its lower bound"
                )
    await backend.aclose()  # a second close must be harmless
