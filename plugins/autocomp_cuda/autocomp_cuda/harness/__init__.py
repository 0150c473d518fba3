"""The CUDA backend's evaluation harness, run from the engine's process.

- ``pipeline.py``: ``Harness``: one evaluation from the static rules to the verdict
- ``settings.py``: ``Settings``: what evaluations run with
- ``children.py``: the sandboxed children: environment, limits, standby workers
- ``reference.py``: reference outputs: reference servers and their cache
- ``builds.py``: compiled once and cached: extensions, Triton kernels, the compiled baseline
- ``jobs.py``: what a candidate worker is asked to do, and the files it gets
- ``timing.py``: the candidate timed in lock-step beside the baselines
- ``judging.py``: the verdict: an ordered list of named checks
- ``verdicts.py``: ``Verdict``, and verdicts read from how a worker ended
- ``files.py``: ownership, cache copies, reading what a worker wrote
"""

from ..statuses import STATUSES
from .judging import TIMED_TOLERANCE_FACTOR, checksums_match
from .pipeline import Harness
from .reference import REFERENCE_FORMAT, ProblemRefused, trial_seeds
from .settings import Settings
from .timing import timed_seeds
from .verdicts import Verdict, describe_sizes

__all__ = [
    "REFERENCE_FORMAT",
    "STATUSES",
    "TIMED_TOLERANCE_FACTOR",
    "Harness",
    "ProblemRefused",
    "Settings",
    "Verdict",
    "checksums_match",
    "describe_sizes",
    "timed_seeds",
    "trial_seeds",
]
