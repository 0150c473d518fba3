"""What ``nki.language`` of the current API (NKI 0.8) has that the legacy ``neuronxcc.nki``
namespace does not, or has differently: the range iterators that became Python ``range`` (0.7),
the compiled loops ``fori_loop`` / ``while_loop`` (0.6), the SPMD program queries of a single
program, the newer dtypes, the byte-aware ``tile_size`` (0.4/0.5), and the names removed since
(each refused with the version that removed it and what replaces it).
"""

from __future__ import annotations

from .. import dtypes, hardware
from ..indexing import NkiError
from ..recording import ACT_FUNCS, ALU_OPS
from ..tracer import Tile, tracer
from . import elementwise, reductions
from .elementwise import _make_binary, _make_unary

NkiTensor = Tile  # what nl.ndarray returns; kernels annotate their arguments with it
float8_e4m3fn = dtypes.DTYPES["float8_e4m3fn"]
float8_e8m0fnu = dtypes.DTYPES["float8_e8m0fnu"]
tfloat32 = "tfloat32"  # a PE input format stored as fp32: named by string


abs_max, abs_min, bypass = (_make_binary(o) for o in ("abs_max", "abs_min", "bypass"))
gelu_apprx_tanh = _make_unary("gelu_apprx_tanh")
for _fn in (abs_max, abs_min, bypass):
    ALU_OPS[id(_fn)] = _fn.__name__
ACT_FUNCS[id(gelu_apprx_tanh)] = "gelu_apprx_tanh"


def softmax(x, axis=-1, dtype=None) -> Tile:
    """The 0.3 experimental wrapper: ``exp(x - max) / sum(exp(x - max))`` over free axes, as the
    instructions it stands for (max and sum reductions, a subtract and a multiply by a
    per-partition value, an exp and a reciprocal)."""
    if not isinstance(x, Tile):
        raise NkiError("nl.softmax takes a tile")
    high = reductions.max(x, axis, keepdims=True)
    e = elementwise.exp(elementwise.subtract(x, high, dtype="float32"))
    total = reductions.sum(e, axis, keepdims=True)
    return elementwise.multiply(e, elementwise.reciprocal(total), dtype=dtype or x.dtype)


def _bounds(name: str, args: tuple) -> range:
    for a in args:
        if not isinstance(a, int) or isinstance(a, bool):
            raise NkiError(
                f"nl.{name} bounds must be Python integers at specialization time, got {a!r} "
                "(a bound known only on device needs nl.fori_loop with an NkiScalar, which this "
                "emulator does not model)",
                "err_dynamic_control_flow_not_supported",
            )
    return range(*args)


def affine_range(*args) -> range:
    """Deprecated since NKI 0.7: a Python ``range`` (the loop is unrolled as Python runs)."""
    return _bounds("affine_range", args)


def sequential_range(*args) -> range:
    """Deprecated since NKI 0.7: a Python ``range``."""
    return _bounds("sequential_range", args)


def static_range(*args) -> range:
    """Deprecated since NKI 0.7: a Python ``range``."""
    return _bounds("static_range", args)


def fori_loop(lower, upper, body_fun, step: int = 1, *, unroll: bool = False) -> None:
    """A compiled loop: ``body_fun(i)`` for ``i`` in ``range(lower, upper, step)``, recorded as
    one loop on device (``unroll=True``: unrolled by the compiler). The emulator traces the body
    once per iteration with ``i`` as a Python int; on device ``i`` is an NkiScalar and the body
    is compiled once, which the replay checks (``replay.fori``)."""
    if isinstance(step, bool) or not isinstance(step, int) or step <= 0:
        raise NkiError(f"nl.fori_loop step must be a positive Python integer, got {step!r}")
    if not callable(body_fun):
        raise NkiError("nl.fori_loop(lower, upper, body_fun, step=1): body_fun must be callable")
    r = _bounds("fori_loop", (lower, upper, step))
    _run_loop("static" if unroll else "fori", r, body_fun)


def while_loop(init, body_fun) -> None:
    """A compiled while loop: ``r = init; while r != 0: r = body_fun(r)``. The emulator runs
    conditions it can know while tracing (Python integers); a condition held in a device
    register (a VirtualRegister or NkiScalar) is not modelled. On device the body is compiled
    once, which the replay checks (``replay.fori``)."""
    if isinstance(init, bool) or not isinstance(init, int):
        raise NkiError(
            "nl.while_loop with a condition held on device is not modelled by this emulator: "
            "pass an integer condition, or use nl.fori_loop",
            "err_unsupported_api",
        )
    t = tracer()
    index = t.emit(["loop", "while", 0, t.line()])
    t.loop_depth += 1
    count, r = 0, init
    try:
        while r != 0:
            t.emit(["iter", count])
            r = body_fun(r)
            if isinstance(r, bool) or not isinstance(r, int):
                raise NkiError(
                    "nl.while_loop body_fun must return the next condition (an integer here)"
                )
            count += 1
    finally:
        t.loop_depth -= 1
        t.emit(["end"])
    t.events[index][2] = count  # the trip count is known once the loop has run


def if_else(cond, then_fn, else_fn=None) -> None:
    """``then_fn()`` when ``cond`` is nonzero, else ``else_fn()`` if given. A Python bool or int
    is resolved while tracing and emits no control flow, as NKI does; a condition held on device
    (an NkiScalar) is not modelled."""
    if not isinstance(cond, int):
        raise NkiError(
            "nl.if_else on a condition held on device is not modelled by this emulator: pass a "
            "Python bool or int",
            "err_unsupported_api",
        )
    chosen = then_fn if cond else else_fn
    if chosen is not None:
        chosen()


def _run_loop(kind: str, r: range, body_fun) -> None:
    t = tracer()
    t.emit(["loop", kind, len(r), t.line()])
    t.loop_depth += 1
    try:
        for i, value in enumerate(r):
            t.emit(["iter", i])
            body_fun(value)
    finally:
        t.loop_depth -= 1
        t.emit(["end"])


def program_id(axis: int = 0) -> int:
    """The index of this program in the SPMD grid: the emulator runs one program, so 0."""
    return 0


def num_programs(axes=None) -> int:
    """The emulator runs a grid of one program."""
    return 1


def program_ndim() -> int:
    """The emulator's launch grid has no dimensions (one program)."""
    return 0


class _TileSize:
    """``nl.tile_size`` (NKI 0.4+): sizes in elements and in bytes. ``psum_fmax`` and
    ``total_available_sbuf_size`` are kept as the documentation keeps them (deprecated)."""

    pmax = hardware.PMAX
    psum_bank_fmax = hardware.PSUM_FMAX
    psum_bank_fmax_bytes = hardware.PSUM_BANK_BYTES
    psum_fmax = hardware.PSUM_FMAX  # deprecated (0.4): use psum_bank_fmax
    psum_num_banks = hardware.PSUM_BANKS  # 0.5
    gemm_stationary_fmax = hardware.GEMM_STATIONARY_FMAX
    gemm_moving_fmax = hardware.GEMM_MOVING_FMAX
    bn_stats_fmax = hardware.BN_STATS_FMAX
    # per partition, set per generation by the tracing process (modules.install)
    sbuf_fmax_bytes = 192 * 1024
    sbuf_fmax = sbuf_fmax_bytes // 4
    sbuf_size_bytes = sbuf_fmax_bytes * hardware.PMAX
    total_available_sbuf_size = sbuf_fmax_bytes  # deprecated (0.4): it is per partition

    def set_sbuf(self, bytes_per_partition: int) -> None:
        cls = type(self)
        cls.sbuf_fmax_bytes = cls.total_available_sbuf_size = bytes_per_partition
        cls.sbuf_fmax = bytes_per_partition // 4
        cls.sbuf_size_bytes = bytes_per_partition * hardware.PMAX


tile_size = _TileSize()

#: names gone from the current namespace: name -> (the NKI version that removed it, the
#: replacement)
REMOVED = {
    "dynamic_range": ("NKI 0.7", "nl.fori_loop or nl.while_loop"),
}

PUBLIC = (
    "NkiTensor float8_e4m3fn float8_e8m0fnu tfloat32 affine_range sequential_range static_range "
    "fori_loop while_loop if_else program_id num_programs program_ndim tile_size abs_max abs_min bypass "
    "gelu_apprx_tanh softmax"
).split()
