"""What every instruction of the current ``nki.isa`` shares: the enumerations (those of v1
are the same objects), the target query, and the argument checks (a destination tile, an enum
member and never a raw integer (NKI 0.3), an ALU operation the target has, a scalar-or-tile
operand, a supported reduce command)."""

from __future__ import annotations

import enum

from .. import isa
from ..indexing import NkiError
from ..recording import ALU_OPS, check_operand, is_scalar, op_name
from ..tracer import Tile

# the enums shared with v1 are the same objects
dge_mode, engine, oob_mode, reduce_cmd = isa.dge_mode, isa.engine, isa.oob_mode, isa.reduce_cmd
tensor_engine, vector_engine, scalar_engine = (
    isa.tensor_engine,
    isa.vector_engine,
    isa.scalar_engine,
)
gpsimd_engine, unknown_engine = isa.gpsimd_engine, isa.unknown_engine
# (parameters named like the enums hide them inside the instructions)
ReduceCmd, DgeMode, OobMode, Engine = reduce_cmd, dge_mode, oob_mode, engine


class nc_version(enum.Enum):
    """The NeuronCore generation: gen2 (Trn1, legacy), gen3 (Trn2), gen4 (Trn3)."""

    gen2 = 2
    gen3 = 3
    gen4 = 4


class matmul_perf_mode(enum.Enum):
    none = "none"
    double_row = "double_row"


class dma_engine(enum.Enum):
    unknown = "unknown"
    sync = "sync"
    activation = "activation"
    gpsimd = "gpsimd"


def get_nc_version() -> nc_version:
    """The target's NeuronCore version (``nc_version.gen3`` on Trn2, ``gen4`` on Trn3)."""
    return nc_version(isa.get_nc_version())


def nc_at_least(version: int, what: str) -> None:
    """A NeuronCore-v``version``+ instruction refused early on an older target (the replay re-checks)."""
    have = isa.get_nc_version()
    if have < version:
        raise NkiError(
            f"{what} is available only on NeuronCore-v{version} and newer; the target "
            f"{isa._generation[0]} is NeuronCore-v{have}",
            "err_unsupported_on_generation",
        )


def as_enum(value, kind, what: str):
    """``value`` as a member of ``kind``: raw integers and strings are refused (NKI 0.3)."""
    if not isinstance(value, kind):
        raise NkiError(
            f"{what} takes an nisa.{kind.__name__} member, got {value!r} (raw integers and "
            "strings are refused since NKI 0.3)",
            "err_invalid_enum_value",
        )
    return value


def dst_tile(x, what: str = "dst") -> Tile:
    if not isinstance(x, Tile):
        raise NkiError(
            f"{what} must be a tile (the current nki.isa writes into an explicit {what})"
        )
    return x


def alu_op(op, what: str) -> str:
    name = op_name(op, ALU_OPS, what)
    if name in ("abs_max", "abs_min"):
        nc_at_least(4, f"nl.{name}")
    return name


def alu_or_bypass(op, what: str) -> str:
    """An ALU operation, or ``bypass`` (nl.bypass, or None): no operation."""
    return "bypass" if op is None or op == "bypass" else alu_op(op, what)


def operand(value, key: str, srcs: list, attrs: dict) -> None:
    """A scalar (recorded as a float) or a tile (recorded as the next source, ``"ap"``)."""
    if isinstance(value, Tile):
        attrs[key] = "ap"
        srcs.append(value)
    elif is_scalar(value):
        attrs[key] = float(value)
    else:
        check_operand(value, key)


def reduce_command(cmd, allowed: tuple[str, ...], what: str) -> str:
    name = as_enum(cmd, ReduceCmd, f"{what} reduce_cmd").name
    if name not in allowed:
        raise NkiError(
            f"{what} reduce_cmd={name} is not emulated (this emulator supports "
            f"{', '.join(allowed)})",
            "err_unsupported_api",
        )
    return name
