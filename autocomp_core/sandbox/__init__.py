"""The sandbox backends run untrusted programs in (candidates, their builds and harnesses).

``run.py`` starts a program and always comes back: isolation levels, hard limits, bounded
output (its module doc has the whole layout). The rest serve it:

* ``supervisor.py``: the program exec'd, with a fresh interpreter, around every run; it sets
  up the isolation and reports how the run ended. It imports only the standard library.
* ``preload.py``: a fork server that imported a ``python -m MODULE`` program once.
* ``workdirs.py``: private work dirs, held while in use, swept when an engine was killed.

What plugins import is here (and in ``autocomp_core``): ``from autocomp_core.sandbox import
run_sandboxed, SandboxLimits``.
"""

from .preload import PreloadServer
from .run import (
    ISOLATION_ENV,
    SandboxError,
    SandboxLimits,
    SandboxResult,
    disk_over,
    isolation_level,
    run_sandboxed,
)
from .supervisor import BUBBLEWRAP, NAMESPACES, NONE, UID_ONLY, USER_NAMESPACES
from .workdirs import HeldDir, private_workdir, remove_tree

__all__ = [
    "BUBBLEWRAP",
    "ISOLATION_ENV",
    "NAMESPACES",
    "NONE",
    "UID_ONLY",
    "USER_NAMESPACES",
    "HeldDir",
    "PreloadServer",
    "SandboxError",
    "SandboxLimits",
    "SandboxResult",
    "disk_over",
    "isolation_level",
    "private_workdir",
    "remove_tree",
    "run_sandboxed",
]
