"""The ``trn`` hardware config and backend options."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from autocomp_core.backend import HardwareConfig


class TrnHardware(HardwareConfig):
    """Which NeuronCore, and how candidates are evaluated.

    ``mode``: ``emulator`` (the NumPy NKI emulator and cost model, runs anywhere), ``neuron``
    (compile and run on a NeuronCore with the installed Neuron SDK), ``auto`` (neuron where a
    device and the SDK are found, else emulator)."""

    generation: Literal["trn1", "trn2"] = Field("trn1", description="NeuronCore-v2 (Trn1) or NeuronCore-v3 (Trn2)")
    mode: Literal["auto", "emulator", "neuron"] = "auto"


class TrnOptions(BaseModel):
    """``[backend_options]`` of the trn backend (unknown keys are refused)."""

    model_config = ConfigDict(extra="forbid")

    seeds: int = Field(3, ge=1, le=8, description="random inputs each candidate is checked on")
    trace_timeout_s: float = Field(60.0, gt=0, description="wall-clock limit of the tracing process")
    replay_timeout_s: float = Field(120.0, gt=0, description="wall-clock limit of the replay process")
    memory_mb: int = Field(6144, ge=512, description="memory limit of each evaluation process")
    parallel: int | None = Field(None, ge=1, description="evaluations at once (default: half the CPU cores)")
    neuron_cores: int | None = Field(None, ge=1, description="Neuron mode: NeuronCores to use (default: all)")
    benchmark_iters: int = Field(10, ge=1, description="Neuron mode: timed iterations (P99 reported)")
    benchmark_warmup: int = Field(2, ge=0, description="Neuron mode: warm-up iterations")
