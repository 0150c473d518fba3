"""``nki.isa`` in the v2 style (NKI 0.2+): every instruction writes an explicit ``dst`` first
argument and returns nothing. Built on the v1 implementations in ``isa.py``."""

from __future__ import annotations

from . import isa

# the enums and queries are the same objects as in v1
dge_mode, engine, oob_mode, reduce_cmd = isa.dge_mode, isa.engine, isa.oob_mode, isa.reduce_cmd
tensor_engine, vector_engine, scalar_engine = (
    isa.tensor_engine,
    isa.vector_engine,
    isa.scalar_engine,
)
gpsimd_engine, unknown_engine, get_nc_version = (
    isa.gpsimd_engine,
    isa.unknown_engine,
    isa.get_nc_version,
)


def nc_matmul(dst, stationary, moving, *, accumulate=None, **kw):
    """dst (PSUM) = stationary.T @ moving; ``accumulate=None``: the first write overwrites, later ones add."""
    isa.nc_matmul(
        stationary,
        moving,
        dst=dst,
        accumulate="auto" if accumulate is None else bool(accumulate),
        **kw,
    )


def nc_transpose(dst, data, *, engine=None, **kw):
    isa.nc_transpose(data, dst=dst, engine=engine, **kw)


def tensor_tensor(dst, data1, data2, op, *, engine=None, **kw):
    isa.tensor_tensor(data1, data2, op, dst=dst, engine=engine, **kw)


def tensor_scalar(
    dst,
    data,
    op0,
    operand0,
    reverse0=False,
    op1=None,
    operand1=None,
    reverse1=False,
    *,
    engine=None,
    **kw,
):
    isa.tensor_scalar(
        data, op0, operand0, reverse0, op1, operand1, reverse1, dst=dst, engine=engine, **kw
    )


def tensor_reduce(dst, op, data, axis, *, negate=False, keepdims=False, **kw):
    isa.tensor_reduce(op, data, axis, dst=dst, negate=negate, keepdims=keepdims, **kw)


def tensor_copy(dst, src, *, engine=None, **kw):
    isa.tensor_copy(src, dst=dst, engine=engine, **kw)


def activation(dst, op, data, *, bias=None, scale=1.0, reduce_op=None, reduce_res=None, **kw):
    isa.activation(
        op, data, bias=bias, scale=scale, reduce_op=reduce_op, reduce_res=reduce_res, dst=dst, **kw
    )


def reciprocal(dst, data, **kw):
    isa.reciprocal(data, dst=dst, **kw)


def memset(dst, value, **kw):
    isa.memset(value=value, dst=dst, **kw)


def tensor_tensor_scan(dst, data0, data1, initial, op0, op1, reverse0=False, reverse1=False, **kw):
    isa.tensor_tensor_scan(data0, data1, initial, op0, op1, reverse0, reverse1, dst=dst, **kw)


def dma_copy(dst, src, dst_rmw_op=None, oob_mode=None, dge_mode=None, **kw):
    isa.dma_copy(dst=dst, src=src, dst_rmw_op=dst_rmw_op, **kw)


PUBLIC = (
    "nc_matmul nc_transpose tensor_tensor tensor_scalar tensor_reduce tensor_copy activation reciprocal "
    "memset tensor_tensor_scan dma_copy engine tensor_engine vector_engine scalar_engine gpsimd_engine "
    "unknown_engine reduce_cmd dge_mode oob_mode get_nc_version"
).split()
