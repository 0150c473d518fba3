"""The backend contract: what a target plugin supplies to the engine.

A backend knows one accelerator (or CPU ISA, or GPU). The engine knows none: it asks
the backend for problems, for the knowledge pack that goes into prompts, for a
validated hardware config, and to evaluate candidate programs.
"""
from __future__ import annotations

import abc
import enum
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

#: Bound applied to captured stdout/stderr kept in an EvalResult (characters).
OUTPUT_LIMIT = 16_000


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
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0

    def __post_init__(self) -> None:
        if self.correct and self.metric is None:
            raise ValueError("a correct EvalResult needs a metric")
        if not self.correct and self.failure is None:
            self.failure = FailureKind.WRONG_ANSWER
        if self.failure is not None and not isinstance(self.failure, FailureKind):
            self.failure = FailureKind(self.failure)
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
            "stdout": self.stdout,
            "stderr": self.stderr,
            "duration_s": self.duration_s,
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
            stdout=data.get("stdout", ""),
            stderr=data.get("stderr", ""),
            duration_s=float(data.get("duration_s", 0.0)),
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
    rules_general: list[str] = field(default_factory=list)
    rules_planning: list[str] = field(default_factory=list)
    rules_coding: list[str] = field(default_factory=list)
    menu: list[str] = field(default_factory=list)
    translation_menu: list[str] = field(default_factory=list)
    examples: list[Example] = field(default_factory=list)

    @classmethod
    def from_dir(cls, folder: Path | str, **overrides: Any) -> KnowledgePack:
        """Load a pack from a folder holding ``knowledge.toml`` and the Markdown files it names.

        ``knowledge.toml`` keys: ``architecture`` and ``isa`` (file names of Markdown text),
        ``rules.general|planning|coding`` (lists), ``menu`` and ``translation_menu`` (lists),
        and ``[[examples]]`` tables with ``name``, ``file``, ``triggers`` and ``phase``.
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
    """Base for a backend's hardware description. Subclass with typed, validated fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def describe(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.model_dump().items())


@dataclass
class Resources:
    """How many evaluations a backend can run at once, and what each needs."""

    max_parallel: int = 1
    gpus_per_eval: int = 0
    memory_mb_per_eval: int = 2048


@dataclass
class DoctorCheck:
    """One prerequisite: whether it is present, and how to install it if not."""

    name: str
    ok: bool
    detail: str = ""
    fix: str = ""  # the command that installs what is missing
    required: bool = True  # False: the backend works without it (an optional extra)


@dataclass
class EvalContext:
    """Per-evaluation settings handed to ``Backend.evaluate``."""

    hardware: HardwareConfig
    seed: int = 0
    timeout_s: float = 120.0
    want_feedback: bool = True  # compute hardware feedback text (utilization, stalls)
    options: dict[str, Any] = field(default_factory=dict)  # backend-specific [backend_options] config


class Capability(str, enum.Enum):
    """Optional features. The engine refuses an option that needs one a backend lacks."""

    HW_FEEDBACK = "hw_feedback"  # evaluate() fills EvalResult.feedback with hardware detail
    TRANSLATION = "translation"  # knowledge pack has a translation menu, baselines are untranslated
    LOWER_BOUND = "lower_bound"  # metric_lower_bound() returns a value


class Backend(abc.ABC):
    """A target. Subclass it in a plugin and return the class from ``autocomp_register_backends``."""

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
    #: pydantic model of the hardware config
    hardware_config_type: ClassVar[type[HardwareConfig]] = HardwareConfig
    capabilities: ClassVar[frozenset[Capability]] = frozenset()
    #: the ``[backend_options]`` it reads; any other is refused as a typo. None: not checked.
    option_names: ClassVar[frozenset[str] | None] = None

    def __init__(self, hardware: HardwareConfig | dict[str, Any] | None = None,
                 options: dict[str, Any] | None = None) -> None:
        if not isinstance(hardware, HardwareConfig):
            hardware = self.hardware_config_type(**(hardware or {}))
        self.hardware = hardware
        self.options = dict(options or {})
        unknown = sorted(set(self.options) - self.option_names) if self.option_names is not None else []
        if unknown:
            known = ", ".join(sorted(self.option_names or ())) or "none"
            raise ValueError(f"unknown [backend_options] option {unknown[0]!r} (known: {known})")

    @property
    def version(self) -> str:
        from importlib.metadata import PackageNotFoundError, version

        module = type(self).__module__.split(".")[0]
        try:
            return version(module.replace("_", "-"))
        except PackageNotFoundError:
            return "unknown"

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

    @abc.abstractmethod
    async def evaluate(self, problem: Problem, code: str, ctx: EvalContext) -> EvalResult:
        """Build, check and measure one candidate. Must never raise for a bad candidate:
        return a failed EvalResult instead. Runs untrusted code only through the sandbox."""

    def hardware_for(self, problem: Problem) -> HardwareConfig:
        """The hardware a problem actually runs on (a problem may pin its own, e.g. an fp32
        4x4 array for a solver); reports and the journal show this one."""
        return self.hardware

    def metric_lower_bound(self, problem: Problem) -> float | None:
        """Speed-of-light bound on the metric for this problem and hardware, if known."""
        return None

    def resources(self) -> Resources:
        return Resources()

    def doctor(self) -> list[DoctorCheck]:
        return []

    def rules(self, problem: Problem) -> list[str]:
        """Extra rules derived from the hardware config or problem (added to the pack's)."""
        return []
