"""Run configuration: a TOML file, then flags, then ``--set section.key=value`` overrides.

Everything is validated up front by pydantic models that forbid unknown keys, and
errors become one line naming the field (``search.beam_size: must be >= 1``).
"""

from __future__ import annotations

import ast
import math
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import ConfigError
from .llm.settings import LLMSettings

__all__ = ["RunConfig", "load_config", "validate", "validated"]

ModelT = TypeVar("ModelT", bound=BaseModel)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ModelsConfig(_Section):
    #: planning ensemble (model strings or aliases); empty = the default for the keys present
    plan: list[str] = Field(default_factory=list)
    #: implementation ensemble; empty = the planning ensemble
    code: list[str] = Field(default_factory=list)


class SearchConfig(_Section):
    iterations: int = Field(8, ge=0, le=1000)
    beam_size: int = Field(4, ge=1, le=256)
    plans_per_candidate: int = Field(4, ge=1, le=256)
    codes_per_plan: int = Field(2, ge=1, le=64)
    #: probability of KEEPING each optimization-menu item in a planning prompt (menu dropout)
    menu_keep_probability: float = Field(0.25, ge=0.0, le=1.0)
    #: probability a prompt states the parent's score
    score_feedback_probability: float = Field(1.0, ge=0.0, le=1.0)
    #: probability a prompt carries the backend's hardware feedback for the parent
    hw_feedback_probability: float = Field(0.0, ge=0.0, le=1.0)
    #: show the whole ancestor chain (plans and code) instead of the parent only
    include_ancestors: bool = False
    #: add the knowledge pack's examples whose trigger words appear in the plan
    examples: bool = True
    #: one call writes code directly, without a planning step
    direct: bool = False
    #: ask for structured old/new edits instead of the whole program
    edits: bool = False
    #: give each failed candidate one repair attempt with its error text
    repair_failed: bool = False
    #: crossover: pairs of beam members combined per iteration, and programs per pair
    combine_pairs: int = Field(0, ge=0, le=64)
    codes_per_combine: int = Field(1, ge=1, le=16)
    #: plan once per menu item (no dropout) for the first N iterations
    exhaustive_first_iterations: int = Field(0, ge=0)
    #: switch to the exhaustive sweep when the best score has not improved by the given
    #: ratio over this many iterations (0 = never)
    exhaustive_on_stagnation_iterations: int = Field(0, ge=0)
    exhaustive_stagnation_ratio: float = Field(1.0, gt=0.0)
    #: regression budget: in the first ``keep_factor_iterations`` iterations a child may be
    #: up to ``keep_factor`` times slower than its parent and still enter the beam
    keep_factor: float = Field(1.1, ge=1.0)
    keep_factor_iterations: int = Field(2, ge=0)
    #: beam de-duplication: -1 off, 0 one per (parent, plan), 1 one per parent, 2 no shared ancestor
    prevent_duplicate_level: Literal[-1, 0, 1, 2] = 0
    #: stop when best(now)/best(N iterations ago) >= threshold (0 = off)
    early_stop_iterations: int = Field(0, ge=0)
    early_stop_threshold: float = Field(1.0, gt=0.0)
    #: check the best program of each iteration, and the run's reported best, on inputs (and
    #: shapes, where the backend offers them) the search never evaluated on: one that fails is
    #: labelled overfit, leaves the beam and is never reported as the best
    held_out: bool = True
    #: after the search, spend as much again on a control evaluated the same way: "iid"
    #: (independent programs from the baseline) or "agent" (one conversation improving its
    #: own last program); the summary compares the two ("none": no control)
    control: Literal["none", "iid", "agent"] = "none"
    #: stop once the best program reaches this fraction of the speed of the backend's lower
    #: bound (``metric_lower_bound``): 0.95 stops when best <= bound / 0.95 (None = never)
    stop_at_bound: float | None = Field(None, gt=0.0, le=1.0)
    #: pipelined: each plan/program moves on the moment it arrives; barrier: plan all, then
    #: implement all, then evaluate all (the original's schedule, kept for comparison)
    schedule: Literal["pipelined", "barrier"] = "pipelined"
    #: run directory whose final beam seeds this run
    continue_from: str | None = None
    #: finished runs whose winning schedules (their best's plans, in order) are applied to
    #: this run's baseline first; what they reach joins the first beam (engine.reuse)
    reuse: list[str] = Field(default_factory=list)
    #: reuse a donor run of another backend too (its plans may not apply)
    reuse_across_backends: bool = False
    #: static: the pack's menu; generated: an LLM proposes strategies for each parent each
    #: iteration (journaled), used instead of the pack's menu; mixed: the pack's menu plus those
    menu_strategy: Literal["static", "generated", "mixed"] = "static"
    #: how many new strategies a generated menu asks for
    generated_menu_size: int = Field(10, ge=1, le=50)


class TranslationConfig(_Section):
    #: the first N iterations use the translation menu (e.g. PyTorch -> NKI)
    iterations: int = Field(0, ge=0)
    #: keep factor during translation: how much slower a translated program may be
    regression_allowance: float = Field(15.0, ge=1.0)
    #: rank by an LLM's 0-10 completeness score, then by metric
    score: bool = True
    #: finish translation early once every beam member scores at least this
    complete_threshold: float = Field(9.0, ge=0.0, le=10.0)
    #: after the last translation iteration, drop the untranslated original from the beam
    drop_original: bool = True


class PromptConfig(_Section):
    #: a knowledge pack folder (knowledge.toml) used instead of the backend's own
    pack: str | None = None
    #: an ISA text longer than this is narrowed to the sections an LLM picks for the problem
    isa_select_above_chars: int = Field(30_000, ge=0)
    #: with ISA selection, also pick subsections inside the chosen sections
    fine_grained: bool = False
    #: examples longer than this in total are narrowed the same way
    examples_select_above_chars: int = Field(30_000, ge=0)
    #: what of the pack a prompt carries: "full" (all of it), "compact" (the architecture
    #: summary where the pack has one, and rules, no ISA reference or examples: for small
    #: models, whose prompt time grows with every token they cannot use), "auto" (compact
    #: when every model is local::)
    knowledge: Literal["auto", "full", "compact"] = "auto"


class EvaluationConfig(_Section):
    timeout_s: float = Field(120.0, gt=0)
    #: evaluations at once; 0 = what the backend says it can run
    parallelism: int = Field(0, ge=0)


class ExecutorConfig(_Section):
    """Where evaluations run: ``kind`` names an executor (``local``, ``ray`` or one a plugin
    registers); the other keys are its options (``ray``: ``address``, ``max_retries``,
    ``no_nodes_timeout_s``), validated by the executor."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    kind: str = "local"

    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class BudgetConfig(_Section):
    usd: float = Field(math.inf, ge=0)
    tokens: int | None = Field(None, ge=0)
    llm_calls: int | None = Field(None, ge=0)
    evaluations: int | None = Field(None, ge=0)
    wall_s: float | None = Field(None, gt=0)


class PlaybookConfig(_Section):
    """The playbook runs write back to and read from (``ledger.playbook``)."""

    #: read the entries nearest the problem into planning prompts, and write this run's
    enabled: bool = True
    #: the SQLite file; default AUTOCOMP_PLAYBOOK, else ~/.local/share/autocomp/playbook.sqlite
    path: str | None = None
    #: how many similar problems the planner hears about
    entries: int = Field(3, ge=1, le=20)
    #: the most characters of the planner's section (it is counted in the prompt)
    max_chars: int = Field(1500, ge=200)


class RunConfig(_Section):
    backend: str
    problem: str
    seed: int = 1111
    #: where the run directory goes; default runs/<backend>-<problem>-<timestamp>
    run_dir: str | None = None
    #: extra plugin modules to load (like AUTOCOMP_PLUGINS)
    plugins: list[str] = Field(default_factory=list)
    hardware: dict[str, Any] = Field(default_factory=dict)
    backend_options: dict[str, Any] = Field(default_factory=dict)
    models: ModelsConfig = Field(default_factory=ModelsConfig)
    search: SearchConfig = Field(default_factory=SearchConfig)
    translation: TranslationConfig = Field(default_factory=TranslationConfig)
    prompt: PromptConfig = Field(default_factory=PromptConfig)
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    playbook: PlaybookConfig = Field(default_factory=PlaybookConfig)
    llm: LLMSettings = Field(default_factory=LLMSettings)

    @model_validator(mode="after")
    def _consistent(self) -> RunConfig:
        if self.translation.iterations > self.search.iterations:
            raise ValueError("translation.iterations cannot exceed search.iterations")
        return self

    def to_toml_dict(self, only_set: bool = False) -> dict[str, Any]:
        """The config as TOML-ready data; ``only_set`` keeps just what the user gave, so
        re-validating it sees the same explicit choices (the dead-switch checks use them)."""
        data = self.model_dump(mode="json", exclude_none=True, exclude_unset=only_set)
        if data.get("budget", {}).get("usd") in (math.inf, "inf", "Infinity"):
            data["budget"].pop("usd", None)
        return data


def describe_validation_error(
    exc: ValidationError, section: str = "", model: type[BaseModel] | None = None
) -> str:
    """One line naming the first bad field (``search.beam_size: ...``). With ``model``, an
    unknown top-level key also lists the keys ``model`` knows."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in (section, *err["loc"]) if p != "") or "config"
    msg = err["msg"]
    if err["type"] == "extra_forbidden":
        msg = "unknown key"
        if model is not None and len(err["loc"]) == 1:
            msg += f" (known: {', '.join(model.model_fields) or 'none'})"
    elif err["type"] == "missing":
        msg = "required"
    more = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
    return f"{where}: {msg}{more}"


def validated(model: type[ModelT], data: Any, section: str) -> ModelT:
    """``data`` validated as ``model``; a ``ConfigError`` naming ``section.key`` if not."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc, section, model)) from None


def parse_value(text: str) -> Any:
    """A ``--set`` value: a TOML/Python literal when it parses as one, else the string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def apply_override(data: dict[str, Any], assignment: str) -> None:
    if "=" not in assignment:
        raise ConfigError(f"--set {assignment!r}: expected section.key=value")
    path, value = assignment.split("=", 1)
    keys = [k for k in path.strip().split(".") if k]
    if not keys:
        raise ConfigError(f"--set {assignment!r}: empty key")
    node = data
    for k in keys[:-1]:
        node = node.setdefault(k, {})
        if not isinstance(node, dict):
            raise ConfigError(f"--set {path}: {k} is not a table")
    node[keys[-1]] = parse_value(value.strip())


def parse_assignments(items: Iterable[str]) -> dict[str, Any]:
    """``["key=value", "a.b=2"]`` as nested data (``--hw`` and ``--option`` flags)."""
    data: dict[str, Any] = {}
    for item in items:
        apply_override(data, item)
    return data


def read_toml(path: Path | str) -> dict[str, Any]:
    path = Path(path)
    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path}: malformed TOML: {exc}") from None


def deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def merge_config(
    path: Path | str | None = None,
    flags: dict[str, Any] | None = None,
    overrides: list[str] | None = None,
) -> dict[str, Any]:
    """File, flags and overrides merged (in that order), not validated yet."""
    data = read_toml(path) if path else {}
    data = deep_merge(data, flags or {})
    for assignment in overrides or []:
        apply_override(data, assignment)
    return data


def load_config(
    path: Path | str | None = None,
    flags: dict[str, Any] | None = None,
    overrides: list[str] | None = None,
) -> RunConfig:
    """Merge file, flags and overrides (in that order) and validate."""
    return validate(merge_config(path, flags, overrides))


def validate(data: dict[str, Any] | RunConfig) -> RunConfig:
    if isinstance(data, RunConfig):
        return data
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"config: {describe_validation_error(exc)}") from None
