"""autocomp-core: an LLM-driven code optimizer for tensor accelerators.

Everything a plugin needs is importable from here: the backend contract, the sandbox,
the hook marker, the run configuration, the errors, the pieces of a static screen and the
plugin author's kit (``contract/kit.py``).
"""

from .config import RunConfig, parse_assignments
from .contract.backend import (
    Backend,
    BackendOptions,
    Capability,
    DoctorCheck,
    EvalContext,
    EvalResult,
    Example,
    FailureKind,
    HardwareConfig,
    KnowledgePack,
    MeasuredProgram,
    Problem,
    bound_text,
)
from .contract.kit import (
    EvaluationRecord,
    applying_limits,
    child_import_path,
    last_json_line,
    limits_section,
    run_failure,
)
from .contract.plugins import make_backend
from .contract.resources import Resources
from .contract.screening import Finding, attribute_root, imported_modules, module_aliases
from .contract.validity import IMPOSSIBLE_RESULT, below_lower_bound, evaluation_seeds
from .errors import ConfigError, FidelityUnsupported, RunError
from .hookspecs import hookimpl
from .sandbox import (
    HeldDir,
    PreloadServer,
    SandboxError,
    SandboxLimits,
    SandboxResult,
    disk_over,
    private_workdir,
    remove_tree,
    run_sandboxed,
)

__version__ = "0.1.0"

__all__ = [
    "IMPOSSIBLE_RESULT",
    "Backend",
    "BackendOptions",
    "Capability",
    "ConfigError",
    "DoctorCheck",
    "EvalContext",
    "EvalResult",
    "EvaluationRecord",
    "Example",
    "FailureKind",
    "FidelityUnsupported",
    "Finding",
    "HardwareConfig",
    "HeldDir",
    "KnowledgePack",
    "MeasuredProgram",
    "PreloadServer",
    "Problem",
    "Resources",
    "RunConfig",
    "RunError",
    "RunSummary",
    "SandboxError",
    "SandboxLimits",
    "SandboxResult",
    "applying_limits",
    "attribute_root",
    "below_lower_bound",
    "bound_text",
    "child_import_path",
    "disk_over",
    "evaluation_seeds",
    "hookimpl",
    "imported_modules",
    "last_json_line",
    "limits_section",
    "make_backend",
    "module_aliases",
    "optimize",
    "optimize_async",
    "parse_assignments",
    "private_workdir",
    "remove_tree",
    "run_failure",
    "run_sandboxed",
]

#: names whose modules pull in the engine and the LLM stack: imported on first use
_LAZY = {
    "optimize": "api",
    "optimize_async": "api",
    "RunSummary": "runner",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
