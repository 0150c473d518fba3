"""The backend contract: what a target plugin supplies to the engine.

A backend knows one accelerator (or CPU ISA, or GPU). The engine knows none: it asks
the backend for problems, for the knowledge pack that goes into prompts, and to evaluate
candidate programs on the hardware config and options the backend was built with.

The engine's side of the contract, in the order of a run:

1. ``Backend(hardware, options)``: both validated through the backend's pydantic models
   (``hardware_config_type``, ``options_type``); unknown or ill-typed keys are bad input.
   Construction is cheap and holds no resources (``backends`` and ``doctor`` build every
   installed backend).
2. ``async with backend:`` around every evaluation of a run; ``aclose()`` at the end,
   even after an error or Ctrl-C, releases what the backend started (warm workers,
   connections, simulators).
3. ``await backend.evaluate(problem, code, ctx)``, as many at once as ``resources()``
   allows. A failed candidate is a failed ``EvalResult``; an exception means the
   evaluator itself broke and becomes an ``INFRA_ERROR`` result (see ``evaluate``).
"""

from __future__ import annotations

import abc
import enum
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, Self, TypeVar, cast, get_args, get_origin

import anyio
from pydantic import BaseModel, ConfigDict

from ..errors import FidelityUnsupported
from .resources import Resources

#: Bound applied to captured stdout/stderr kept in an EvalResult (characters).
OUTPUT_LIMIT = 16_000
#: feedback reaches the journal and the next prompt; part of it may be the candidate's own text
FEEDBACK_LIMIT = 16_000


class FailureKind(str, enum.Enum):
    """Why a candidate did not produce a usable metric."""

    COMPILE_ERROR = "compile_error"
    WRONG_ANSWER = "wrong_answer"
    TIMEOUT = "timeout"
    CRASH = "crash"
    REJECTED = "rejected"  # refused before running: bad shape, forbidden construct, hack suspected
    INFRA_ERROR = "infra_error"  # the evaluator itself failed; not the candidate's fault


def bound_text(text: str | bytes | None, limit: int = OUTPUT_LIMIT) -> str:
    """Keep the head and tail of a long output, marking what was cut."""
    if text is None:
        return ""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters cut ...]\n{text[-half:]}"


@dataclass
class EvalResult:
    """Outcome of evaluating one program. The metric is always lower-is-better."""

    correct: bool
    metric: float | None = None
    unit: str = ""
    failure: FailureKind | None = None
    feedback: str = ""  # text for the next prompt (compiler errors, utilization, stalls)
    extra: dict[str, float] = field(default_factory=dict)
    status: str = ""  # the backend's own finer verdict (e.g. ``cuda_fault``, ``hack_suspected``)
    #: what the verdict rests on (``eval --json`` shows it): ``seeds`` (the input seeds used),
    #: ``shapes`` (the problem shapes run, as text), ``checks`` (the checks that ran, by name)
    verification: dict[str, Any] = field(default_factory=dict)
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    #: where it ran, filled in by the executor (``{"executor": "ray", "node_id": ...}``)
    placement: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.correct and self.metric is None:
            raise ValueError("a correct EvalResult needs a metric")
        if not self.correct and self.failure is None:
            self.failure = FailureKind.WRONG_ANSWER
        if self.failure is not None and not isinstance(self.failure, FailureKind):
            self.failure = FailureKind(self.failure)
        self.feedback = bound_text(self.feedback, FEEDBACK_LIMIT)
        self.stdout = bound_text(self.stdout)
        self.stderr = bound_text(self.stderr)

    @property
    def score(self) -> float:
        """The value the search minimizes: the metric, or +inf when not correct."""
        return float(self.metric) if self.correct and self.metric is not None else float("inf")

    def to_dict(self) -> dict[str, Any]:
        return {
            "correct": self.correct,
            "metric": self.metric,
            "unit": self.unit,
            "failure": self.failure.value if self.failure else None,
            "feedback": self.feedback,
            "extra": dict(self.extra),
            "status": self.status,
            "verification": dict(self.verification),
            "stdout": self.stdout,
            "stderr": self.stderr,
            "duration_s": self.duration_s,
            "placement": dict(self.placement),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalResult:
        return cls(
            correct=bool(data["correct"]),
            metric=data.get("metric"),
            unit=data.get("unit", ""),
            failure=FailureKind(data["failure"]) if data.get("failure") else None,
            feedback=data.get("feedback", ""),
            extra=dict(data.get("extra") or {}),
            status=data.get("status", ""),
            verification=dict(data.get("verification") or {}),
            stdout=data.get("stdout", ""),
            stderr=data.get("stderr", ""),
            duration_s=float(data.get("duration_s", 0.0)),
            placement=dict(data.get("placement") or {}),
        )


@dataclass
class Problem:
    """One kernel to optimize: its baseline program and whatever the harness needs."""

    id: str
    description: str
    baseline_code: str
    baseline_path: Path | None = None
    context: str = ""  # problem-specific text added to prompts (shapes, layout, constraints)
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MeasuredProgram:
    """One program with the metric published for it on the real target."""

    chain: str  # programs measured one after another, e.g. "trn-tutorial/1_gemm"
    step: int  # position in the chain (0 = the start program)
    name: str  # short label shown in tables
    measured: float  # published measurement, in the backend's metric unit
    problem: Problem  # what to evaluate it as
    code: str  # the program, adapted only as ``adapted`` says
    held_out: bool = False  # not used to fit the model (reported separately)
    source: str = ""  # path inside the source checkout
    adapted: str = ""  # what the reader changed (renames, imports); "" if nothing
    #: the number of the evaluation compared with ``measured``: "" for its metric, else a key
    #: of ``EvalResult.extra`` (e.g. a baseline the backend times beside the program)
    metric: str = ""


@dataclass
class Example:
    """An in-context example, included when one of its trigger words is in the plan."""

    name: str
    text: str
    triggers: list[str] = field(default_factory=list)
    phase: str = "code"  # "plan" or "code"

    def triggered_by(self, text: str) -> bool:
        low = text.lower()
        return any(t.lower() in low for t in self.triggers)


@dataclass
class KnowledgePack:
    """Everything target-specific that goes into prompts. Mostly text shipped as data files."""

    architecture: str = ""
    isa: str = ""
    #: a short architecture summary for small models' prompts (``[prompt] knowledge =
    #: "compact"``); empty: they get the whole architecture
    architecture_compact: str = ""
    rules_general: list[str] = field(default_factory=list)
    rules_planning: list[str] = field(default_factory=list)
    rules_coding: list[str] = field(default_factory=list)
    menu: list[str] = field(default_factory=list)
    translation_menu: list[str] = field(default_factory=list)
    examples: list[Example] = field(default_factory=list)

    @classmethod
    def from_dir(cls, folder: Path | str, **overrides: Any) -> KnowledgePack:
        """Load a pack from a folder holding ``knowledge.toml`` and the Markdown files it names.

        ``knowledge.toml`` keys: ``architecture``, ``architecture_compact`` and ``isa`` (file
        names of Markdown text), ``rules.general|planning|coding`` (lists), ``menu`` and
        ``translation_menu`` (lists), and ``[[examples]]`` tables with ``name``, ``file``,
        ``triggers`` and ``phase``.
        """
        folder = Path(folder)
        data = tomllib.loads((folder / "knowledge.toml").read_text())

        def text(key: str) -> str:
            name = data.get(key)
            return (folder / name).read_text() if name else ""

        rules = data.get("rules", {})
        pack = cls(
            architecture=text("architecture"),
            isa=text("isa"),
            architecture_compact=text("architecture_compact"),
            rules_general=list(rules.get("general", [])),
            rules_planning=list(rules.get("planning", [])),
            rules_coding=list(rules.get("coding", [])),
            menu=list(data.get("menu", [])),
            translation_menu=list(data.get("translation_menu", [])),
            examples=[
                Example(
                    name=e["name"],
                    text=(folder / e["file"]).read_text(),
                    triggers=list(e.get("triggers", [])),
                    phase=e.get("phase", "code"),
                )
                for e in data.get("examples", [])
            ],
        )
        for key, value in overrides.items():
            setattr(pack, key, value)
        return pack


class HardwareConfig(BaseModel):
    """Base for a backend's hardware description (``[hardware]``). Subclass with typed,
    validated fields; unknown keys are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def describe(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.model_dump().items())


class BackendOptions(BaseModel):
    """Base for a backend's ``[backend_options]``: how to evaluate, as opposed to what the
    hardware is (a simulator mode, a cache folder, timing repetitions). Subclass with typed,
    validated fields; unknown keys are refused. They take part in the evaluation cache key."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass
class DoctorCheck:
    """One prerequisite: whether it is present, and how to install it if not."""

    name: str
    ok: bool
    detail: str = ""
    fix: str = ""  # the command that installs what is missing
    required: bool = True  # False: the backend works without it (an optional extra)


@dataclass(frozen=True)
class EvalContext:
    """What changes from one evaluation to the next. The hardware config and the options
    are not here: they are the backend's own (``self.hardware``, ``self.options``)."""

    seed: int = 0
    timeout_s: float = 120.0
    want_feedback: bool = True  # compute hardware feedback text (utilization, stalls)


class Capability(str, enum.Enum):
    """Optional features. The engine refuses a setting that needs one a backend lacks.

    Whether a backend translates (a translation menu) and whether it has a lower bound
    (``metric_lower_bound`` returns a number) are read from the backend itself, not declared.
    """

    HW_FEEDBACK = "hw_feedback"  # evaluate() fills EvalResult.feedback with hardware detail


HardwareT = TypeVar("HardwareT", bound="HardwareConfig")
OptionsT = TypeVar("OptionsT", bound="BackendOptions")


class Backend(abc.ABC, Generic[HardwareT, OptionsT]):
    """A target. Subclass it in a plugin and return the class from ``autocomp_register_backends``.

    Name the hardware and options models as its parameters, ``class MyBackend(Backend[MyHardware,
    MyOptions])``: ``self.hardware`` and ``self.options`` are then typed as those, and the
    models are the ones ``[hardware]`` and ``[backend_options]`` are validated with."""

    #: short unique name used on the command line (``gemmini``, ``rvv``)
    name: ClassVar[str]
    #: human description for ``autocomp-core backends``
    description: ClassVar[str] = ""
    #: file extension of programs, with the dot (``.c``, ``.py``)
    file_extension: ClassVar[str] = ".txt"
    #: language tag for fenced code in prompts
    language: ClassVar[str] = ""
    #: text that starts the program in an unfenced answer (``void solution``, ``class ModelNew``)
    code_anchor: ClassVar[str | None] = None
    #: unit of the metric (``cycles``, ``ms``)
    metric_unit: ClassVar[str] = ""
    #: pydantic model of the hardware config (``[hardware]``)
    hardware_config_type: ClassVar[type[HardwareConfig]] = HardwareConfig
    #: pydantic model of the options (``[backend_options]``); the base takes none
    options_type: ClassVar[type[BackendOptions]] = BackendOptions
    capabilities: ClassVar[frozenset[Capability]] = frozenset()

    def __init__(
        self,
        hardware: HardwareConfig | Mapping[str, Any] | None = None,
        options: BackendOptions | Mapping[str, Any] | None = None,
    ) -> None:
        """Validate the hardware config and options (pydantic ``ValidationError`` when bad).
        Override to derive settings from them; acquire nothing here (see ``__aenter__``)."""
        self.hardware: HardwareT = cast(
            HardwareT,
            hardware
            if isinstance(hardware, self.hardware_config_type)
            else self.hardware_config_type.model_validate(dict(hardware or {})),
        )
        self.options: OptionsT = cast(
            OptionsT,
            options
            if isinstance(options, self.options_type)
            else self.options_type.model_validate(dict(options or {})),
        )

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """``Backend[MyHardware, MyOptions]`` sets ``hardware_config_type`` and ``options_type``
        (a class that sets them itself keeps its own)."""
        super().__init_subclass__(**kwargs)
        for base in getattr(cls, "__orig_bases__", ()):
            if get_origin(base) is Backend:
                hardware, options = get_args(base)
                if isinstance(hardware, type) and "hardware_config_type" not in vars(cls):
                    cls.hardware_config_type = hardware
                if isinstance(options, type) and "options_type" not in vars(cls):
                    cls.options_type = options

    @property
    def version(self) -> str:
        from importlib.metadata import PackageNotFoundError, version

        module = type(self).__module__.split(".")[0]
        try:
            return version(module.replace("_", "-"))
        except PackageNotFoundError:
            return "unknown"

    # -- lifecycle ----------------------------------------------------------------------
    async def __aenter__(self) -> Self:
        """The engine enters the backend before its first evaluation. Override to start
        what every evaluation shares (a simulator server, a connection to a board)."""
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        with anyio.CancelScope(shield=True):  # a Ctrl-C must not leave workers behind
            await self.aclose()

    async def aclose(self) -> None:
        """Release everything the backend started (warm workers, servers, connections).
        Called once the run's evaluations are over, also after an error or cancellation;
        must be safe to call twice."""

    # -- problems and prompts -----------------------------------------------------------
    @abc.abstractmethod
    def problems(self) -> list[Problem]:
        """Every problem this backend ships."""

    def load_problem(self, ref: str) -> Problem:
        """A problem by id. Backends that accept user files or folders override this."""
        for problem in self.problems():
            if problem.id == ref:
                return problem
        known = ", ".join(p.id for p in self.problems())
        raise KeyError(f"unknown problem {ref!r} for backend {self.name!r} (known: {known})")

    @abc.abstractmethod
    def knowledge(self, problem: Problem) -> KnowledgePack:
        """The prompt knowledge for a problem (may depend on the problem family)."""

    def rules(self, problem: Problem) -> list[str]:
        """Extra rules derived from the hardware config or problem (added to the pack's)."""
        return []

    # -- evaluation ---------------------------------------------------------------------
    @abc.abstractmethod
    async def evaluate(self, problem: Problem, code: str, ctx: EvalContext) -> EvalResult:
        """Build, check and measure one candidate on ``self.hardware`` with ``self.options``.

        A bad candidate (it does not compile, computes the wrong answer, runs too long,
        crashes, cheats) is a failed ``EvalResult`` with its ``FailureKind``. Raise only
        when the evaluator itself fails (a missing tool, a bug): the engine turns the
        exception into an ``INFRA_ERROR`` result, which is not cached and not repaired, and
        the run goes on, so do not catch every exception yourself. Untrusted code runs only
        through the sandbox (``autocomp_core.run_sandboxed``)."""

    def hardware_for(self, problem: Problem) -> HardwareConfig:
        """The hardware a problem actually runs on (a problem may pin its own, e.g. an fp32
        4x4 array for a solver); reports and the journal show this one."""
        return self.hardware

    def metric_lower_bound(self, problem: Problem) -> float | None:
        """Speed-of-light bound on the metric for this problem and hardware, if known.
        Reports show the best result as a fraction of it and flag a result below it."""
        return None

    def held_out_problem(self, problem: Problem) -> Problem | None:
        """The problem the held-out check evaluates a search's best programs on: the same
        problem at other shapes where the family allows (a program tuned to the searched
        shapes must still be right there), or None for the same shapes. The engine always
        draws the held-out check's inputs from seeds the search never used."""
        return None

    def resources(self) -> Resources:
        """What one evaluation holds while it runs; the engine runs as many at once as fit."""
        return Resources()

    def doctor(self) -> list[DoctorCheck]:
        """Every tool ``evaluate`` needs: present or not, and the command that installs it."""
        return []

    # -- fidelity -----------------------------------------------------------------------
    def fidelity_programs(self, source: Path) -> list[MeasuredProgram]:
        """Programs someone measured on the real target, read from a local checkout of
        their public source, to compare the metric ``evaluate`` gives with the measured one
        (``autocomp-core fidelity``). Raise ``FidelityUnsupported`` with one line naming the
        file looked for when ``source`` is not the checkout this reader expects."""
        raise FidelityUnsupported(f"backend {self.name} has no reader of measured programs")
