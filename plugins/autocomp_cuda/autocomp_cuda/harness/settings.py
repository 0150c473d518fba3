"""What an evaluation is run with: the harness's settings (``[backend_options]`` and the
device from ``[hardware]``) and the environment every worker's Inductor gets."""

from __future__ import annotations

from dataclasses import dataclass

#: How every worker runs Inductor (the compiled baseline's compiler). It precompiles its C++
#: headers (several CPU-seconds) before it loads even a cached kernel, into a folder of the
#: worker's own: each candidate's worker paid that again for the compiled baseline that was
#: copied to it ready-made. (Part of that cache's key: the headers change the kernels' keys.)
INDUCTOR_ENV = {"TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS": "0"}


@dataclass
class Settings:
    device: str = "cpu"  # "cpu" or "cuda"
    size: str = "tiny"  # "tiny" or "full"
    trials: int = 5
    warmup: int = 3
    # Timed calls, every one checked against the baseline's output. 40: at 20, an honest 1.5x
    # on the CPU device measured 1.09-1.52x on a busy 2-core machine, at 40 1.38-1.47x, for
    # no evaluation time that shows above the load's noise (benchmarks/cuda_timing_stability.py).
    reps: int = 40
    settle_s: float = 0.02
    compile_timeout_s: float = 600.0
    load_timeout_s: float = 120.0
    correctness_timeout_s: float = 120.0
    timing_timeout_s: float = 300.0
    memory_mb: int | None = 8192
    # The most a worker's work dir may hold (its outputs for the judge, its builds, a
    # baseline's kept inputs): beyond, its sandbox kills it, the candidate's failure.
    disk_mb: int = 16384
    static_checks: bool = True
    require_custom_kernel: bool = (
        False  # True: a pure-PyTorch ModelNew is refused, not just flagged
    )
    roofline_slack: float = 0.5  # reject below slack x the speed-of-light time
    side_stream_gap_ms: float = 0.1
    peak_gflops: float | None = None
    bandwidth_gbs: float | None = None
    compile_baseline: bool = False  # also time torch.compile(Model), interleaved like the eager one
    warm_workers: bool = True  # keep the next candidate's worker started, torch imported
    #: fork candidate and reference workers from a process that imported torch once
    #: (sandbox.preload) instead of starting each with a fresh interpreter; the sandbox is the
    #: same either way
    preload_workers: bool = True
    worker_slack_s: float = (
        30.0  # beyond the phase watchdogs: startup, writing results; then killed
    )
    standby_idle_s: float = 300.0  # a standby worker nobody used by then leaves on its own
    cache_max_mb: int = 4096  # refs/ and builds/ each pruned to this, least recently used first

    def phase_timeouts(self) -> dict[str, float]:
        return {
            "setup": self.load_timeout_s,
            "load": self.load_timeout_s,
            "correctness": self.correctness_timeout_s,
            "timing": self.timing_timeout_s,
        }

    def eval_deadline_s(self) -> float:
        """When an evaluation's worker is killed: every phase's watchdog, timing twice (a
        timed worker's calls alternate with the other worker's), and the slack."""
        return sum(self.phase_timeouts().values()) + self.timing_timeout_s + self.worker_slack_s
