"""Golden tests of the Gemmini functional model against independent numpy / Python references,
and relational tests of the timing model. These drive the model directly (no simulator), and
run twice: on the Python model and on the compiled one (int8; fp32 is the Python model's)."""

from __future__ import annotations

import struct
from fractions import Fraction

import numpy as np
import pytest
from autocomp_gemmini import isa
from autocomp_gemmini.config import GemminiConfig
from autocomp_gemmini.model import (
    ByteMemory,
    Gemmini,
    GemminiError,
    TimingModel,
    TimingParams,
    native,
)
from autocomp_gemmini.model.numerics import rounding_shift
from hypothesis import given, settings, strategies as st

BASE = 0x80000000
ONE = 0x3F800000  # 1.0f


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def op(addr: int, cols: int, rows: int) -> int:
    return (rows << 48) | (cols << 32) | (addr & 0xFFFFFFFF)


MODEL = "python"  # which implementation Rig builds for int8; set by the `implementation` fixture


@pytest.fixture(scope="module", params=["python", "compiled"], autouse=True)
def implementation(request):
    global MODEL
    MODEL = request.param
    yield request.param
    MODEL = "python"


class Rig:
    """A model on a flat memory, with helpers to place arrays and issue commands."""

    def __init__(self, dim: int = 16, dtype: str = "int8", mem_mb: int = 4) -> None:
        self.cfg = GemminiConfig(
            pe_dim=dim, dtype=dtype, spad_kb=64 if dtype == "int8" else 256, acc_kb=64
        )
        self.mem = ByteMemory(mem_mb << 20, BASE)
        params = TimingParams()
        if MODEL == "compiled" and dtype == "int8":
            compiled = native.load()
            timing = compiled.NativeTiming(params, self.cfg.spad_rows, self.cfg.acc_rows)
            self.g = compiled.NativeGemmini(self.cfg, self.mem, timing)
        else:
            self.g = Gemmini(
                self.cfg, self.mem, TimingModel(params, self.cfg.spad_rows, self.cfg.acc_rows)
            )
        self.next = BASE

    def put(self, arr: np.ndarray) -> int:
        addr = self.next
        data = np.ascontiguousarray(arr).tobytes()
        self.mem.write(addr, data)
        self.next += (len(data) + 63) // 64 * 64
        return addr

    def alloc(self, nbytes: int) -> int:
        addr = self.next
        self.next += (nbytes + 63) // 64 * 64
        return addr

    def get(self, addr: int, shape, dtype) -> np.ndarray:
        n = int(np.prod(shape)) * np.dtype(dtype).itemsize
        return np.frombuffer(self.mem.read(addr, n), dtype).reshape(shape)

    def cmd(self, funct: int, rs1: int, rs2: int) -> None:
        self.g.timing.instret += 4  # a few CPU instructions between commands
        self.g.execute(funct, rs1, rs2)

    def config_ex(self, dataflow=isa.WEIGHT_STATIONARY, act=0, shift=0, a_t=0, b_t=0):
        self.cmd(
            isa.CONFIG,
            (1 << 16) | (b_t << 9) | (a_t << 8) | (act << 3) | (dataflow << 2),
            shift | (1 << 48),
        )

    def config_ld(self, stride: int, state: int = 0, scale: float = 1.0, shrunk: bool = False):
        self.cmd(
            isa.CONFIG,
            (f32_bits(scale) << 32)
            | (self.cfg.pe_dim << 16)
            | (state << 3)
            | (int(shrunk) << 2)
            | isa.CONFIG_LD,
            stride,
        )

    def config_st(self, stride: int, act: int = 0, scale: float = 1.0):
        self.cmd(isa.CONFIG, (act << 2) | isa.CONFIG_ST, (f32_bits(scale) << 32) | stride)


def ref_store(acc: np.ndarray, scale: float, relu: bool) -> np.ndarray:
    """Independent reference of the store unit: exact rational rounding, half to even."""
    out = np.zeros(acc.shape, np.int8)
    s = np.float32(scale)
    for idx, v in np.ndenumerate(acc):
        prod = np.float32(np.float32(int(v)) * s)  # float32 multiply, as the hardware
        r = round(Fraction(float(prod)))  # Python rounds exact halves to even
        if relu:
            r = max(r, 0)
        out[idx] = max(-128, min(127, r))
    return out


# ---------------------------------------------------------------------------- WS primitives
@settings(max_examples=25, deadline=None)
@given(
    dim=st.sampled_from([4, 8, 16]),
    rows=st.integers(1, 16),
    cols=st.integers(1, 16),
    kk=st.integers(1, 16),
    relu=st.booleans(),
    scale_exp=st.integers(-12, 0),
    odd_scale=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_ws_tile_matches_numpy(dim, rows, cols, kk, relu, scale_exp, odd_scale, seed):
    rows, cols, kk = min(rows, dim), min(cols, dim), min(kk, dim)
    rng = np.random.default_rng(seed)
    r = Rig(dim)
    a = rng.integers(-128, 128, (rows, kk), dtype=np.int8)
    b = rng.integers(-128, 128, (kk, cols), dtype=np.int8)
    bias = rng.integers(-5000, 5000, (rows, cols), dtype=np.int32)
    scale = 2.0**scale_exp * (0.7 if odd_scale else 1.0)
    pa, pb, pd = r.put(a), r.put(b), r.put(bias)
    pc = r.alloc(rows * cols)
    r.config_ex()
    r.config_ld(kk, 0)
    r.config_ld(cols, 1)
    r.config_ld(cols * 4, 2)
    r.config_st(cols, act=int(relu), scale=scale)
    r.cmd(isa.MVIN, pa, op(0, kk, rows))
    r.cmd(isa.MVIN2, pb, op(dim, cols, kk))
    r.cmd(isa.MVIN3, pd, op(isa.ACC_BIT, cols, rows))
    r.cmd(isa.PRELOAD, op(dim, cols, kk), op(isa.ACC_BIT | isa.ACCUMULATE_BIT, cols, rows))
    r.cmd(isa.COMPUTE_PRELOADED, op(0, kk, rows), op(isa.GARBAGE_ADDR, dim, dim))
    r.cmd(isa.MVOUT, pc, op(isa.ACC_BIT, cols, rows))
    r.g.fence()
    acc = a.astype(np.int64) @ b.astype(np.int64) + bias
    np.testing.assert_array_equal(r.get(pc, (rows, cols), np.int8), ref_store(acc, scale, relu))


def test_compute_accumulated_reuses_weights_and_overwrite_vs_accumulate():
    rng = np.random.default_rng(1)
    r = Rig(4)
    a1, a2 = (rng.integers(-9, 9, (4, 4), dtype=np.int8) for _ in range(2))
    w = rng.integers(-9, 9, (4, 4), dtype=np.int8)
    p1, p2, pw = r.put(a1), r.put(a2), r.put(w)
    out = r.alloc(4 * 4 * 4)
    r.config_ex()
    r.config_ld(4)
    r.config_st(16)
    r.cmd(isa.MVIN, p1, op(0, 4, 4))
    r.cmd(isa.MVIN, p2, op(4, 4, 4))
    r.cmd(isa.MVIN, pw, op(8, 4, 4))
    acc = isa.ACC_BIT
    r.cmd(isa.PRELOAD, op(8, 4, 4), op(acc, 4, 4))
    r.cmd(isa.COMPUTE_PRELOADED, op(0, 4, 4), op(isa.GARBAGE_ADDR, 4, 4))
    r.cmd(isa.PRELOAD, op(isa.GARBAGE_ADDR, 4, 4), op(acc | isa.ACCUMULATE_BIT, 4, 4))
    r.cmd(isa.COMPUTE_ACCUMULATED, op(4, 4, 4), op(isa.GARBAGE_ADDR, 4, 4))  # same weights
    r.cmd(isa.MVOUT, out, op(acc | isa.FULL_BIT, 4, 4))
    r.g.fence()
    want = a1.astype(np.int64) @ w + a2.astype(np.int64) @ w
    np.testing.assert_array_equal(r.get(out, (4, 4), np.int32), want)
    # without the accumulate bit the second result overwrites the first
    r.cmd(isa.PRELOAD, op(8, 4, 4), op(acc, 4, 4))
    r.cmd(isa.COMPUTE_PRELOADED, op(0, 4, 4), op(isa.GARBAGE_ADDR, 4, 4))
    r.cmd(isa.PRELOAD, op(isa.GARBAGE_ADDR, 4, 4), op(acc, 4, 4))
    r.cmd(isa.COMPUTE_ACCUMULATED, op(4, 4, 4), op(isa.GARBAGE_ADDR, 4, 4))
    r.cmd(isa.MVOUT, out, op(acc | isa.FULL_BIT, 4, 4))
    r.g.fence()
    np.testing.assert_array_equal(r.get(out, (4, 4), np.int32), a2.astype(np.int64) @ w)


@pytest.mark.parametrize("a_t,b_t", [(0, 1), (1, 0), (1, 1)])
def test_transposes(a_t, b_t):
    rng = np.random.default_rng(7)
    r = Rig(8)
    a = rng.integers(-50, 50, (8, 8), dtype=np.int8)
    b = rng.integers(-50, 50, (8, 8), dtype=np.int8)
    pa, pb = r.put(a), r.put(b)
    out = r.alloc(8 * 8 * 4)
    r.config_ex(a_t=a_t, b_t=b_t)
    r.config_ld(8)
    r.config_st(32)
    r.cmd(isa.MVIN, pa, op(0, 8, 8))
    r.cmd(isa.MVIN, pb, op(8, 8, 8))
    r.cmd(isa.PRELOAD, op(8, 8, 8), op(isa.ACC_BIT, 8, 8))
    r.cmd(isa.COMPUTE_PRELOADED, op(0, 8, 8), op(isa.GARBAGE_ADDR, 8, 8))
    r.cmd(isa.MVOUT, out, op(isa.ACC_BIT | isa.FULL_BIT, 8, 8))
    r.g.fence()
    A = a.T if a_t else a
    B = b.T if b_t else b
    np.testing.assert_array_equal(r.get(out, (8, 8), np.int32), A.astype(np.int64) @ B)


@settings(max_examples=15, deadline=None)
@given(
    shift=st.integers(0, 12), relu=st.booleans(), seed=st.integers(0, 2**16), k=st.integers(1, 3)
)
def test_output_stationary_rounding_shift_to_scratchpad(shift, relu, seed, k):
    rng = np.random.default_rng(seed)
    r = Rig(4)
    a = [rng.integers(-128, 128, (4, 4), dtype=np.int8) for _ in range(k)]
    b = [rng.integers(-128, 128, (4, 4), dtype=np.int8) for _ in range(k)]
    out = r.alloc(16)
    r.config_ex(dataflow=isa.OUTPUT_STATIONARY, act=int(relu), shift=shift)
    r.config_ld(4)
    r.config_st(4)
    for i in range(k):
        r.cmd(isa.MVIN, r.put(a[i]), op(8 * i, 4, 4))
        r.cmd(isa.MVIN, r.put(b[i]), op(8 * i + 4, 4, 4))
    for i in range(k):
        c = 100 if i == k - 1 else isa.GARBAGE_ADDR  # write the result to spad row 100 at the end
        r.cmd(isa.PRELOAD, op(isa.GARBAGE_ADDR, 4, 4), op(c, 4, 4))
        r.cmd(
            isa.COMPUTE_PRELOADED if i == 0 else isa.COMPUTE_ACCUMULATED,
            op(8 * i, 4, 4),
            op(8 * i + 4, 4, 4),
        )
    r.cmd(isa.MVOUT, out, op(100, 4, 4))
    r.g.fence()
    acc = sum(a[i].astype(np.int64) @ b[i] for i in range(k))
    want = np.array([[round(Fraction(int(v), 2**shift)) for v in row] for row in acc])
    if relu:
        want = np.maximum(want, 0)
    np.testing.assert_array_equal(r.get(out, (4, 4), np.int8), np.clip(want, -128, 127))


@settings(max_examples=40, deadline=None)
@given(x=st.integers(-(2**31), 2**31 - 1), shift=st.integers(0, 30))
def test_rounding_shift_is_round_half_even(x, shift):
    assert int(rounding_shift(np.array([x]), shift)[0]) == round(Fraction(x, 2**shift))


def test_mvin_scale_saturates_and_block_mvin_places_blocks():
    r = Rig(4)
    data = np.array([[100, -100, 3, -3, 1, 2, 3, 4]], np.int8)
    p = r.put(data)
    r.config_ld(8, scale=2.0)
    r.cmd(isa.MVIN, p, op(20, 8, 1))  # two DIM-wide blocks, block stride DIM=4 rows
    np.testing.assert_array_equal(r.g.spad[20], [127, -128, 6, -6])
    np.testing.assert_array_equal(r.g.spad[24], [2, 4, 6, 8])


def test_fp32_scale_relu_and_full_reads():
    r = Rig(4, "fp32")
    a = np.arange(16, dtype=np.float32).reshape(4, 4) / 7
    b = np.eye(4, dtype=np.float32) - 0.5
    out = r.alloc(64)
    r.config_ex()
    r.config_ld(16)
    r.config_st(16, act=1, scale=0.5)
    r.cmd(isa.MVIN, r.put(a), op(0, 4, 4))
    r.cmd(isa.MVIN, r.put(b), op(4, 4, 4))
    r.cmd(isa.PRELOAD, op(4, 4, 4), op(isa.ACC_BIT, 4, 4))
    r.cmd(isa.COMPUTE_PRELOADED, op(0, 4, 4), op(isa.GARBAGE_ADDR, 4, 4))
    r.cmd(isa.MVOUT, out, op(isa.ACC_BIT, 4, 4))
    r.g.fence()
    want = np.maximum((a @ b) * np.float32(0.5), 0)
    np.testing.assert_allclose(r.get(out, (4, 4), np.float32), want, rtol=1e-6)


# ---------------------------------------------------------------------------- LOOP_WS
def loop_ws(
    r: Rig, I, J, K, pads, A, B, D, C, strides, *, full_c=False, ex_acc=False, act=0, low_d=False
):
    r.cmd(
        isa.LOOP_WS_CONFIG_BOUNDS,
        (pads[2] << 32) | (pads[1] << 16) | pads[0],
        (K << 32) | (J << 16) | I,
    )
    r.cmd(isa.LOOP_WS_CONFIG_ADDRS_AB, A, B)
    r.cmd(isa.LOOP_WS_CONFIG_ADDRS_DC, D, C)
    r.cmd(isa.LOOP_WS_CONFIG_STRIDES_AB, strides[0], strides[1])
    r.cmd(isa.LOOP_WS_CONFIG_STRIDES_DC, strides[2], strides[3])
    r.cmd(isa.LOOP_WS, (act << 8) | (int(low_d) << 2) | (int(full_c) << 1) | int(ex_acc), 0)


@settings(max_examples=20, deadline=None)
@given(
    dim=st.sampled_from([4, 8, 16]),
    m=st.integers(1, 40),
    n=st.integers(1, 40),
    k=st.integers(1, 40),
    bias=st.booleans(),
    relu=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_loop_ws_matches_numpy(dim, m, n, k, bias, relu, seed):
    rng = np.random.default_rng(seed)
    r = Rig(dim)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b = rng.integers(-128, 128, (k, n), dtype=np.int8)
    d = rng.integers(-9999, 9999, (m, n), dtype=np.int32)
    pa, pb, pd, pc = r.put(a), r.put(b), r.put(d), r.alloc(m * n)
    I, J, K = -(-m // dim), -(-n // dim), -(-k // dim)
    r.config_st(n, act=int(relu), scale=1 / 64)
    r.config_ld(k, 0)
    r.config_ld(n, 1)
    r.config_ld(n * 4, 2)
    loop_ws(
        r,
        I,
        J,
        K,
        (I * dim - m, J * dim - n, K * dim - k),
        pa,
        pb,
        pd if bias else 0,
        pc,
        (k, n, n, n),
        act=int(relu),
    )
    r.g.fence()
    acc = a.astype(np.int64) @ b + (d if bias else 0)
    np.testing.assert_array_equal(r.get(pc, (m, n), np.int8), ref_store(acc, 1 / 64, relu))


def test_loop_ws_ex_accumulate_splits_k_and_full_c():
    rng = np.random.default_rng(3)
    r = Rig(8)
    m, n, k = 16, 24, 32
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b = rng.integers(-128, 128, (k, n), dtype=np.int8)
    pa, pb, pc = r.put(a), r.put(b), r.alloc(m * n * 4)
    r.config_st(n * 4)
    half = k // 2
    loop_ws(r, 2, 3, 2, (0, 0, 0), pa, pb, 0, 0, (k, n, 0, n))  # first half of K, keep in acc
    loop_ws(
        r,
        2,
        3,
        2,
        (0, 0, 0),
        pa + half,
        pb + half * n,
        0,
        pc,
        (k, n, 0, n),
        full_c=True,
        ex_acc=True,
    )
    r.g.fence()
    np.testing.assert_array_equal(r.get(pc, (m, n), np.int32), a.astype(np.int64) @ b)


def test_loop_ws_rejects_tiles_that_do_not_fit():
    r = Rig(16)
    with pytest.raises(GemminiError, match="half of the scratchpad"):
        loop_ws(r, 64, 1, 64, (0, 0, 0), BASE, BASE, 0, 0, (16, 16, 0, 16))


# ---------------------------------------------------------------------------- LOOP_CONV_WS
def conv_ref(x, w, bias, stride, pad):
    b, h = x.shape[:2]
    kd, _, _, oc = w.shape
    od = (h + 2 * pad - kd) // stride + 1
    out = np.zeros((b, od, od, oc), np.int64)
    xp = np.pad(x.astype(np.int64), ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    for i in range(od):
        for j in range(od):
            patch = xp[:, i * stride : i * stride + kd, j * stride : j * stride + kd, :]
            out[:, i, j, :] = np.einsum("bhwc,hwco->bo", patch, w.astype(np.int64))
    return out + bias


@settings(max_examples=8, deadline=None)
@given(
    in_dim=st.integers(3, 9),
    ic=st.sampled_from([4, 8, 12]),
    oc=st.sampled_from([4, 8]),
    kd=st.sampled_from([1, 3]),
    stride=st.sampled_from([1, 2]),
    seed=st.integers(0, 2**16),
)
def test_loop_conv_ws_matches_reference(in_dim, ic, oc, kd, stride, seed):
    pad = kd // 2
    rng = np.random.default_rng(seed)
    r = Rig(4)
    x = rng.integers(-128, 128, (1, in_dim, in_dim, ic), dtype=np.int8)
    w = rng.integers(-128, 128, (kd, kd, ic, oc), dtype=np.int8)
    bias = rng.integers(-9999, 9999, oc, dtype=np.int32)
    od = (in_dim + 2 * pad - kd) // stride + 1
    px, pw, pbias, pout = r.put(x), r.put(w), r.put(bias), r.alloc(od * od * oc)
    r.config_st(oc, act=0, scale=1 / 256)
    irows = (od - 1) * stride + kd
    dpad = max(0, irows - pad - in_dim)
    r.cmd(
        16,
        (oc << 48) | (ic << 32) | (in_dim << 16) | 1,
        (pad << 48) | (stride << 32) | (od << 16) | od,
    )
    r.cmd(17, kd << 48, (1 << 48) | (od << 32) | (od << 16) | oc)
    r.cmd(18, (kd << 48) | (kd << 32) | (ic << 16) | pad, (dpad << 48) | (pad << 32) | (dpad << 16))
    r.cmd(19, od << 48, (ic << 48) | (oc << 32) | (oc << 16) | od)
    r.cmd(20, pw, pout)
    r.cmd(21, pbias, px)
    r.cmd(isa.LOOP_CONV_WS, 0, 1)  # bias on, no pooling, no activation
    r.g.fence()
    want = ref_store(conv_ref(x, w, bias, stride, pad), 1 / 256, False)
    np.testing.assert_array_equal(r.get(pout, (1, od, od, oc), np.int8), want)


# ---------------------------------------------------------------------------- errors
def test_compute_without_preload_is_an_error():
    r = Rig(4)
    with pytest.raises(GemminiError, match="without a preceding preload"):
        r.cmd(isa.COMPUTE_PRELOADED, op(0, 4, 4), op(isa.GARBAGE_ADDR, 4, 4))


def test_rows_past_the_scratchpad_are_an_error():
    r = Rig(4)
    last = r.cfg.spad_rows - 2
    with pytest.raises(GemminiError, match="past the end"):
        r.cmd(isa.MVIN, BASE, op(last, 4, 4))


def test_mvout_lands_only_after_completion_or_fence():
    r = Rig(4)
    r.config_st(4)
    out = r.alloc(16)
    r.mem.write(out, b"\x11" * 16)
    r.cmd(isa.MVOUT, out, op(0, 4, 4))
    assert r.get(out, (16,), np.uint8)[0] == 0x11  # still in flight: memory unchanged
    r.g.fence()
    assert r.get(out, (16,), np.uint8)[0] == 0  # the scratchpad rows were zero


# ---------------------------------------------------------------------------- timing
def gemm_cycles(reuse: bool) -> float:
    r = Rig(16)
    r.config_ex()
    r.config_ld(16)
    for i in range(8):
        r.cmd(isa.MVIN, BASE, op(16 * i, 16, 16))
    r.cmd(isa.MVIN, BASE, op(2048, 16, 16))  # the weights, in another bank than A
    for i in range(8):
        w = isa.GARBAGE_ADDR if (reuse and i) else 2048
        r.cmd(isa.PRELOAD, op(w, 16, 16), op(isa.ACC_BIT | (16 * i), 16, 16))
        r.cmd(
            isa.COMPUTE_ACCUMULATED if (reuse and i) else isa.COMPUTE_PRELOADED,
            op(16 * i, 16, 16),
            op(isa.GARBAGE_ADDR, 16, 16),
        )
    r.g.fence()
    return r.g.timing.cpu_now()


def test_reloading_weights_costs_nothing_when_each_preload_streams_alongside_a_compute():
    """Gemmini's ExecuteController runs a COMPUTE and the PRELOAD queued behind it together
    (perform_mul_pre): the new weight rows stream in while A's rows do. Preloading new weights
    before every compute is then as fast as keeping them (B = GARBAGE)."""
    assert gemm_cycles(reuse=True) == gemm_cycles(reuse=False)


def ex_busy_of_preload_compute_chain(
    n: int, preload_rows_ready_late: bool = False, weights_row: int = 2048
) -> float:
    """Execute-unit cycles of n (preload new weights, compute 16 rows) pairs, every operand in
    the scratchpad before the first (or, with preload_rows_ready_late, each preload's weights
    moved in just before it, so they land after the compute before it started). A is at row 0
    (bank 0 of 4, 1024 rows each); the weights from `weights_row` on."""
    r = Rig(16)
    r.config_ex()
    r.config_ld(16)
    r.cmd(isa.MVIN, BASE, op(0, 16, 16))  # A
    for i in range(n):
        if not preload_rows_ready_late:
            r.cmd(isa.MVIN, BASE, op(weights_row + 16 * i, 16, 16))  # B_i
    r.g.fence()
    busy = r.g.timing.stats.busy["ex"]
    for i in range(n):
        if preload_rows_ready_late:
            r.cmd(isa.MVIN, BASE, op(weights_row + 16 * i, 16, 16))
        r.cmd(isa.PRELOAD, op(weights_row + 16 * i, 16, 16), op(isa.ACC_BIT | (16 * i), 16, 16))
        r.cmd(isa.COMPUTE_PRELOADED, op(0, 16, 16), op(isa.GARBAGE_ADDR, 16, 16))
    r.g.fence()
    return r.g.timing.stats.busy["ex"] - busy


def test_preload_before_every_compute_runs_near_peak():
    """The first preload runs alone (DIM cycles); every later one pairs with the compute before
    it, so n pairs take (n + 1) * DIM cycles, not 2 n DIM (8 pairs: 144 cycles, 89% of peak)."""
    assert ex_busy_of_preload_compute_chain(8) == 9 * 16


def test_weights_in_the_bank_of_a_take_turns_with_a():
    """ExecuteController's same_bank check: when the preload's weight rows and the compute's A
    rows are in one scratchpad bank, the two streams take turns reading it, so the pair lasts
    the sum of the two: n pairs cost as much as n preloads and n computes one after another."""
    assert ex_busy_of_preload_compute_chain(8, weights_row=16) == 16 * 16
    assert ex_busy_of_preload_compute_chain(8, weights_row=1024) == 9 * 16  # the next bank


def test_a_preload_whose_weights_are_still_loading_does_not_pair():
    """A preload enters the execute queue only when its weights have landed; if they land after
    the compute before it started, that compute runs alone and the preload follows on its own."""
    late = ex_busy_of_preload_compute_chain(8, preload_rows_ready_late=True)
    # the load unit runs ahead of the execute unit for a while, so some preloads still pair
    assert ex_busy_of_preload_compute_chain(8) < late <= 16 * 16


def test_mvin_from_address_zero_fills_zeros_without_reading_memory():
    """Gemmini's load controller treats DRAM address 0 as "fill with zeros" (LoadController:
    all_zeros = vaddr === 0): no memory request, the rows become zero, in the scratchpad and
    in the accumulator (acc_t rows), block moves included; nothing at address 0 is read (this
    memory starts at 0x80000000, so a read there would fail)."""
    r = Rig(16)
    r.config_ld(16)
    r.config_ld(64, state=1)
    r.config_ld(64, state=2)
    sevens = r.put(np.full((16, 64), 7, np.int8))
    r.cmd(isa.MVIN2, sevens, op(0, 64, 16))  # 4 blocks of 7s
    r.cmd(isa.MVIN3, r.put(np.full((16, 16), -5, np.int32)), op(isa.ACC_BIT | 32, 16, 16))
    r.cmd(isa.MVIN, 0, op(16, 48, 16))  # zero the second to fourth block (48 columns)
    r.cmd(isa.MVIN, 0, op(isa.ACC_BIT | 32, 16, 16))
    r.g.fence()
    assert (r.g.spad[0:16] == 7).all() and (r.g.spad[16:64] == 0).all()
    assert (r.g.acc[32:48] == 0).all()
    assert r.g.counters.bytes_in == 16 * 64 + 16 * 64  # only the real mvins read memory


def test_mvin_from_address_zero_takes_no_memory_latency():
    r = Rig(16)
    r.config_ld(16)
    r.cmd(isa.MVIN, 0, op(0, 16, 16))
    r.g.fence()
    zero = r.g.timing.cpu_now()
    r2 = Rig(16)
    r2.config_ld(16)
    r2.cmd(isa.MVIN, BASE, op(0, 16, 16))
    r2.g.fence()
    assert zero + r2.g.timing.p.dma_latency <= r2.g.timing.cpu_now()


def test_reusing_one_scratchpad_row_serializes_loads_and_computes():
    def run(spread: bool) -> float:
        r = Rig(16)
        r.config_ex()
        r.config_ld(16)
        for i in range(16):
            a = 32 * i if spread else 0
            r.cmd(isa.MVIN, BASE, op(a, 16, 16))
            r.cmd(isa.MVIN, BASE, op(a + 16, 16, 16))
            r.cmd(isa.PRELOAD, op(a + 16, 16, 16), op(isa.ACC_BIT | isa.ACCUMULATE_BIT, 16, 16))
            r.cmd(isa.COMPUTE_PRELOADED, op(a, 16, 16), op(isa.GARBAGE_ADDR, 16, 16))
        r.g.fence()
        return r.g.timing.cpu_now()

    assert run(spread=True) < run(spread=False)


def test_fence_stalls_the_cpu_until_the_accelerator_drains():
    r = Rig(16)
    r.config_ld(16)
    r.cmd(isa.MVIN, BASE, op(0, 16, 16))
    before = r.g.timing.cpu_now()
    r.g.fence()
    p = r.g.timing.p
    assert r.g.timing.cpu_now() >= before + p.dma_latency
    assert r.g.timing.stats.stall_fence > 0


def test_full_queue_stalls_the_cpu():
    r = Rig(16)
    r.config_ld(16)
    for i in range(40):
        r.g.execute(isa.MVIN, BASE, op(16 * i, 16, 16))  # issued back to back, no CPU work between
    assert r.g.timing.stats.stall_queue_full > 0


def test_timing_parameters_come_from_the_toml_file():
    params = TimingParams.from_toml()
    assert params.bus_bytes_per_cycle == 16 and params.load_depth == 8
    custom = TimingParams.from_toml(
        "[cpu]\ncpi=2.0\nrocc_issue=1\n[queues]\nload_depth=1\nex_depth=1\nstore_depth=1\n"
        "[dma]\nlatency=5\nbus_bytes_per_cycle=8\noverhead=0\nacc_read_latency=0\n"
        "[execute]\npreload_per_row=1.0\npreload_reuse=1\nfill_drain_dims=2\ncompute_overhead=0\nmin_rows=4\n"
        "config=1\n"
        "flush_dims=1\n[loop]\nissue=1\n"
    )
    assert custom.cpi == 2.0 and custom.dma_latency == 5


def test_config_validation_and_params_header():
    with pytest.raises(ValueError):
        GemminiConfig(pe_dim=12)
    with pytest.raises(ValueError):
        GemminiConfig(unknown=1)
    cfg = GemminiConfig(pe_dim=4, dtype="fp32")
    header = cfg.params_header()
    assert "#define DIM 4" in header and "#define ELEM_T_IS_FLOAT" in header
    assert cfg.spad_rows * cfg.row_bytes == cfg.spad_kb * 1024
