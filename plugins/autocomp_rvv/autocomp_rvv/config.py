"""The RVV hardware config: which core the cycle model imitates, its VLEN/DLEN, and an optional board."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from autocomp_core import HardwareConfig

from .costmodel import CORE_PRESETS


def _power_of_two(value: int, what: str, lo: int, hi: int) -> int:
    if value < lo or value > hi or value & (value - 1):
        raise ValueError(f"{what} must be a power of two between {lo} and {hi}, got {value}")
    return value


class BoardConfig(BaseModel):
    """A real RISC-V Linux board reached over SSH (``[hardware.board]``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str
    user: str
    port: int = Field(22, ge=1, le=65535)
    key: str | None = None  # private key file; None uses the SSH agent / default keys
    remote_dir: str = "/tmp/autocomp-rvv"
    known_hosts: str | None = None  # file to verify the host key; None accepts any key (lab boards)
    run_prefix: str = ""  # prepended to the remote command, e.g. "taskset -c 1"
    reps: int = Field(7, ge=1, le=1000)  # timed repetitions; the minimum is reported
    timeout_s: float = Field(60.0, gt=0)


class RvvHardware(HardwareConfig):
    """``[hardware]`` for the rvv backend.

    ``core`` picks the cycle-model parameter set (see ``data/cores.toml``); ``vlen`` and ``dlen``
    override its defaults. Correctness always runs at every VLEN in ``check_vlens`` plus ``vlen``.
    """

    core: Literal["saturn", "k230"] = "saturn"
    vlen: int | None = None
    dlen: int | None = None
    check_vlens: tuple[int, ...] = (128, 256)
    autovectorize: bool = (
        False  # let clang auto-vectorize plain C (off: vectorization is the candidate's)
    )
    board: BoardConfig | None = None

    @field_validator("vlen")
    @classmethod
    def _vlen(cls, v: int | None) -> int | None:
        return None if v is None else _power_of_two(v, "vlen", 128, 4096)

    @field_validator("dlen")
    @classmethod
    def _dlen(cls, v: int | None) -> int | None:
        return None if v is None else _power_of_two(v, "dlen", 32, 4096)

    @field_validator("check_vlens")
    @classmethod
    def _check_vlens(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if not v:
            raise ValueError("check_vlens must name at least one VLEN")
        return tuple(_power_of_two(x, "check_vlens entry", 128, 4096) for x in v)

    @model_validator(mode="after")
    def _dlen_fits(self) -> RvvHardware:
        if self.effective_dlen > self.effective_vlen:
            raise ValueError(
                f"dlen ({self.effective_dlen}) cannot exceed vlen ({self.effective_vlen})"
            )
        return self

    @property
    def effective_vlen(self) -> int:
        return self.vlen or CORE_PRESETS[self.core].vlen

    @property
    def effective_dlen(self) -> int:
        return self.dlen or min(CORE_PRESETS[self.core].dlen, self.effective_vlen)

    @property
    def all_check_vlens(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.check_vlens) | {self.effective_vlen}))
