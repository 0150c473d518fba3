"""The compiled model (model/_native.cc) against the Python model: random command streams,
mostly valid with now and then an arbitrary command, must leave both in the same state
after every command, and the first command either rejects must be rejected by both with
the same message."""

from __future__ import annotations

import random
import struct
import warnings

import numpy as np
import pytest
from autocomp_gemmini import isa
from autocomp_gemmini.config import GemminiConfig
from autocomp_gemmini.model import (
    ByteMemory,
    Gemmini,
    TimingModel,
    TimingParams,
    native,
)
from hypothesis import given, settings, strategies as st

BASE = 0x80000000
MEM = 1 << 20


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def op(addr: int, cols: int, rows: int) -> int:
    return (rows << 48) | (cols << 32) | (addr & 0xFFFFFFFF)


class Commands:
    """Random commands for one configuration: mostly valid, an arbitrary one with probability `wild`."""

    def __init__(self, rng: random.Random, cfg: GemminiConfig, wild: float = 0.02) -> None:
        self.rng, self.cfg, self.wild = rng, cfg, wild
        self.queue: list[tuple] = []

    def spad(self) -> int:
        return self.rng.randrange(0, self.cfg.spad_rows - 2 * self.cfg.pe_dim)

    def acc(self) -> int:
        r = self.rng
        flags = (isa.ACCUMULATE_BIT if r.random() < 0.6 else 0) | (
            isa.FULL_BIT if r.random() < 0.2 else 0
        )
        return isa.ACC_BIT | flags | r.randrange(0, self.cfg.acc_rows - 2 * self.cfg.pe_dim)

    def local(self, acc_share: float) -> int:
        if self.rng.random() < 0.05:
            return isa.GARBAGE_ADDR
        return self.acc() if self.rng.random() < acc_share else self.spad()

    def n(self) -> int:
        dim = self.cfg.pe_dim
        return self.rng.choice([dim, dim, dim, self.rng.randrange(1, dim + 1)])

    def dram(self) -> int:
        return BASE + self.rng.randrange(0, MEM - 80000)

    def next(self) -> tuple:
        if self.queue:
            return self.queue.pop(0)
        r, dim = self.rng, self.cfg.pe_dim
        if r.random() < self.wild:
            return self.arbitrary()
        k = r.random()
        if k < 0.05:
            return self.config()
        if k < 0.4:
            cols = self.n() if r.random() < 0.9 else r.randrange(1, 2 * dim)
            return (
                r.choice([isa.MVIN, isa.MVIN2, isa.MVIN3]),
                self.dram(),
                op(self.local(0.3), cols, self.n()),
            )
        if k < 0.85:  # a preload and its compute
            weights = self.spad() if r.random() < 0.85 else r.choice([isa.GARBAGE_ADDR, self.acc()])
            c = self.local(0.8) if r.random() < 0.9 else isa.GARBAGE_ADDR
            a = self.spad() if r.random() < 0.95 else isa.GARBAGE_ADDR
            bd = (
                isa.GARBAGE_ADDR
                if r.random() < 0.7
                else self.local(0.4) & ~(isa.ACCUMULATE_BIT | isa.FULL_BIT)
            )
            funct = r.choice(
                [isa.COMPUTE_PRELOADED, isa.COMPUTE_PRELOADED, isa.COMPUTE_ACCUMULATED]
            )
            self.queue.append((funct, op(a, self.n(), self.n()), op(bd, self.n(), self.n())))
            return isa.PRELOAD, op(weights, self.n(), self.n()), op(c, self.n(), self.n())
        if k < 0.95:
            return isa.MVOUT, self.dram(), op(self.local(0.8), self.n(), self.n())
        if k < 0.965:
            return isa.FLUSH, 0, 0
        if k < 0.985:
            return "fence", 0, 0
        return self.loop_ws()

    def config(self) -> tuple:
        r, dim = self.rng, self.cfg.pe_dim
        kind = r.choice(["ex", "ld", "ld", "st"])
        if kind == "ex":
            rs1 = (
                (r.random() < 0.1) << 7
                | r.choice([0, 1, 2]) << 16
                | (r.random() < 0.15) << 9
                | (r.random() < 0.15) << 8
                | r.choice([0, 0, 1]) << 3
                | r.choice([1, 1, 1, 0]) << 2
            )
            return isa.CONFIG, rs1, r.randrange(0, 14) | r.choice([0, 1, 1, 2]) << 48
        if kind == "ld":
            scale = r.choice([1.0, 1.0, 1.0, 0.5, 2.0, 0.7, 3.3, -1.5])
            rs1 = (
                f32_bits(scale) << 32
                | r.choice([0, 0, dim]) << 16
                | r.choice([0, 1, 2]) << 3
                | (r.random() < 0.15) << 2
                | isa.CONFIG_LD
            )
            return isa.CONFIG, rs1, r.choice([0, 8, 13, 16, 40, 64, 128, 256, dim, 4 * dim])
        scale = r.choice([1.0, 1 / 64, 1 / 1024, 0.3, 5.0, 1e-6])
        return (
            isa.CONFIG,
            r.choice([0, 0, 1]) << 2 | isa.CONFIG_ST,
            f32_bits(scale) << 32 | r.choice([0, 7, 16, 64, dim]),
        )

    def loop_ws(self) -> tuple:
        r, dim = self.rng, self.cfg.pe_dim
        i, j, k = (r.randrange(1, 3) for _ in range(3))
        pads = [r.randrange(0, dim) if r.random() < 0.3 else 0 for _ in range(3)]
        d = self.dram() if r.random() < 0.5 else 0
        c = self.dram() if r.random() < 0.8 else 0
        act_flags = r.choice([0, 1]) << 8 | (r.random() < 0.3) | (r.random() < 0.3) << 1
        self.queue = [
            (isa.LOOP_WS_CONFIG_ADDRS_AB, self.dram(), self.dram()),
            (isa.LOOP_WS_CONFIG_ADDRS_DC, d, c),
            (isa.LOOP_WS_CONFIG_STRIDES_AB, k * dim, j * dim),
            (isa.LOOP_WS_CONFIG_STRIDES_DC, r.choice([0, j * dim]), j * dim),
            (isa.LOOP_WS, act_flags, 0),
        ]
        return (
            isa.LOOP_WS_CONFIG_BOUNDS,
            pads[2] << 32 | pads[1] << 16 | pads[0],
            k << 32 | j << 16 | i,
        )

    def arbitrary(self) -> tuple:
        r = self.rng
        funct = r.choice(
            [*range(22), 30, isa.CONFIG, isa.MVIN, isa.MVOUT, isa.PRELOAD, isa.COMPUTE_PRELOADED]
        )
        special = [0, 3, isa.GARBAGE_ADDR, 0x1000, BASE + MEM - 8, 2**64 - 8, r.getrandbits(64)]
        return (
            funct,
            r.choice(special + [self.dram()]),
            r.choice(special + [op(self.local(0.5), 99, 99)]),
        )


def snapshot(g) -> dict:
    """Everything either model holds, in a comparable form."""
    t = g.timing
    out = {
        "spad": g.spad.tobytes(),
        "acc": g.acc.tobytes(),
        "spad_used": g.spad_used.tobytes(),
        "acc_used": g.acc_used.tobytes(),
        "memory": bytes(g.mem.buf),
        "counters": g.counters,
        "ld": g.ld,
        "st": g.st,
        "pending_writes": [(float(t_), a, d) for t_, a, d in g.pending_writes],
        "stats": t.stats,
        "loop_regs": (g.loop_ws_regs, g.loop_conv_regs),
        "in_flight": g.in_flight(),
    }
    if isinstance(g, Gemmini):
        pre = g.preload
        out["core"] = {
            "dataflow": g.dataflow,
            "sys_act": g.sys_act,
            "a_transpose": g.a_transpose,
            "b_transpose": g.b_transpose,
            "a_stride": g.a_stride,
            "sys_shift": g.sys_shift,
            "c_stride": g.c_stride,
            "dim": g.dim,
            "preload": pre
            and (pre.bd.raw, pre.bd_cols, pre.bd_rows, pre.c.raw, pre.c_cols, pre.c_rows),
            "weights": np.asarray(g.weights).astype(np.int64).ravel().tolist(),
            "os_state": np.asarray(g.os_state).astype(np.int64).ravel().tolist(),
        }
        out["timing"] = {
            "unit_free": dict(t.unit_free),
            "pending": {u: list(q) for u, q in t.pending.items()},
            "written": t.written,
            "read_done": t.read_done,
            "last_end": t.last_end,
            "stall": t.stall,
            "instret": t.instret,
        }
    else:
        out["core"], out["timing"] = g._state(), t._state()
    return out


def models(dim: int, delay_stores: bool, seed: int):
    cfg = GemminiConfig(pe_dim=dim, spad_kb=16, acc_kb=16)
    contents = np.random.default_rng(seed).integers(0, 256, MEM, dtype=np.uint8).tobytes()
    params = TimingParams.from_toml()
    compiled = native.load()
    out = []
    for make in (
        lambda mem: Gemmini(
            cfg, mem, TimingModel(params, cfg.spad_rows, cfg.acc_rows), delay_stores
        ),
        lambda mem: compiled.NativeGemmini(
            cfg, mem, compiled.NativeTiming(params, cfg.spad_rows, cfg.acc_rows), delay_stores
        ),
    ):
        mem = ByteMemory(MEM, BASE)
        mem.buf[:] = contents
        out.append(make(mem))
    return cfg, out


def step(g, command: tuple, instructions: int) -> str | None:
    g.timing.instret += instructions
    funct, rs1, rs2 = command
    try:
        with warnings.catch_warnings():
            warnings.simplefilter(
                "ignore", RuntimeWarning
            )  # numpy's NaN-to-int casts, mirrored by the C++
            g.fence() if funct == "fence" else g.execute(funct, rs1, rs2)
    except Exception as exc:  # noqa: BLE001 -- both models must fail alike, whatever the failure
        return f"{type(exc).__name__}: {exc}"
    return None


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1), dim=st.sampled_from([4, 8, 16, 32]), delay_stores=st.booleans()
)
def test_compiled_model_matches_the_python_model(seed, dim, delay_stores):
    rng = random.Random(
        seed
    )  # a whole command stream per seed (a stream is too long for hypothesis to draw)
    cfg, (python, compiled) = models(dim, delay_stores, seed)
    commands = Commands(rng, cfg)
    for _ in range(150):
        command, instructions = commands.next(), rng.choice([0, 1, 3, 10, 50])
        outcome = step(python, command, instructions)
        assert step(compiled, command, instructions) == outcome, command
        assert snapshot(compiled) == snapshot(python), command
        if outcome is not None:  # an error ends a simulation
            break


def test_streams_reach_every_command_and_some_errors():
    """The generator above is not vacuous: it drives every primitive and LOOP_WS, mostly without error."""
    seen: dict[object, list[int]] = {}
    for seed in range(12):
        rng = random.Random(seed)
        cfg, (python, _) = models(16, True, seed)
        commands = Commands(rng, cfg)
        for _ in range(150):
            command = commands.next()
            failed = step(python, command, 4) is not None
            seen.setdefault(command[0], [0, 0])[failed] += 1
            if failed:
                break
    ok = {funct for funct, (good, _) in seen.items() if good}
    assert ok >= {
        isa.CONFIG,
        isa.MVIN,
        isa.MVIN2,
        isa.MVIN3,
        isa.MVOUT,
        isa.PRELOAD,
        isa.COMPUTE_PRELOADED,
        isa.COMPUTE_ACCUMULATED,
        isa.FLUSH,
        isa.LOOP_WS,
        "fence",
    }
    assert sum(bad for _, bad in seen.values()) >= 3


def test_a_difference_is_caught():
    """The comparison sees a one-element difference in the compiled model's accumulator."""
    _, (python, compiled) = models(8, True, 1)
    for g in (python, compiled):
        step(g, (isa.MVIN, BASE, op(isa.ACC_BIT, 8, 8)), 4)
    assert snapshot(compiled) == snapshot(python)
    compiled.acc[3, 2] += 1
    assert snapshot(compiled) != snapshot(python)


def test_compiled_model_is_int8_only():
    compiled = native.load()
    cfg = GemminiConfig(pe_dim=4, dtype="fp32")
    timing = compiled.NativeTiming(TimingParams(), cfg.spad_rows, cfg.acc_rows)
    with pytest.raises(ValueError, match="int8 only"):
        compiled.NativeGemmini(cfg, ByteMemory(1024, BASE), timing)


@pytest.fixture
def fresh_build(monkeypatch, tmp_path):
    """native's build, forgotten before and after the test, caching under tmp_path."""
    monkeypatch.setenv("AUTOCOMP_GEMMINI_CACHE", str(tmp_path / "cache"))
    native._build.cache_clear()
    yield tmp_path
    native._build.cache_clear()


def test_without_a_compiler_the_python_model_is_used(fresh_build, monkeypatch, caplog):
    monkeypatch.setattr(native, "compiler", lambda: None)
    assert "no C++ compiler" in native.missing()
    assert native.built() is None
    with pytest.raises(native.NativeUnavailable, match="no C\\+\\+ compiler"):
        native.build()
    assert "the Python model runs" in caplog.text


def test_a_failed_compile_is_reported_once_and_not_retried(fresh_build, monkeypatch, caplog):
    broken = fresh_build / "_native.cc"
    broken.write_text("this is not C++\n")
    monkeypatch.setattr(native, "SOURCE", broken)
    assert native.built() is None
    assert native.built() is None
    assert caplog.text.count("compiling _native.cc failed") == 1
    assert not list((fresh_build / "cache").rglob("*.so"))  # no half-written library left behind


def test_the_build_is_cached_by_source(fresh_build, monkeypatch):
    source = fresh_build / "_native.cc"
    source.write_text('extern "C" int answer() { return 42; }\n')  # quick to compile
    monkeypatch.setattr(native, "SOURCE", source)
    first = native.build()
    native._build.cache_clear()
    assert native.build() == first  # found in the cache, not rebuilt
    source.write_text(source.read_text() + "\n// changed\n")
    native._build.cache_clear()
    assert native.build() != first
