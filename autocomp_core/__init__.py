"""autocomp-core: an LLM-driven code optimizer for tensor accelerators."""
from .backend import (Backend, Capability, DoctorCheck, EvalContext, EvalResult, Example,
                      FailureKind, HardwareConfig, KnowledgePack, Problem, Resources)
from .hookspecs import hookimpl

__version__ = "0.1.0"

__all__ = [
    "Backend", "Capability", "DoctorCheck", "EvalContext", "EvalResult", "Example", "FailureKind",
    "HardwareConfig", "KnowledgePack", "Problem", "Resources", "hookimpl", "optimize",
    "optimize_async",
]


def __getattr__(name: str):
    # The engine pulls in the LLM stack; import it only when the API is used.
    if name in ("optimize", "optimize_async"):
        from . import api

        return getattr(api, name)
    raise AttributeError(name)
