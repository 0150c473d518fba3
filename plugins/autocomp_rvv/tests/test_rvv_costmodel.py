"""The cycle model and the Spike log reader, on hand-made instruction streams and log text."""

from __future__ import annotations

import pytest
from autocomp_rvv.costmodel import CORE_PRESETS, model_cycles
from autocomp_rvv.trace import Insn, TraceError, parse_region

SATURN = CORE_PRESETS["saturn"]
K230 = CORE_PRESETS["k230"]


def vec(
    mnemonic: str, operands: str, vl: int, lmul: float = 1.0, sew: int = 32, addrs=None
) -> Insn:
    return Insn(0, mnemonic, operands, sew=sew, lmul=lmul, vl=vl, mem_addrs=list(addrs or []))


def scalar(mnemonic: str = "addi", operands: str = "a0, a0, 1") -> Insn:
    return Insn(0, mnemonic, operands)


def unit(base: int, n: int, size: int = 4) -> list[int]:
    return [base + i * size for i in range(n)]


def test_presets_are_documented_core_kinds():
    assert (SATURN.vlen, SATURN.dlen, SATURN.decoupled) == (256, 128, True)
    assert (K230.vlen, K230.decoupled) == (128, False)
    assert SATURN.with_lengths(512, 256).vlen == 512


def test_scalar_code_costs_a_cycle_per_instruction_and_more_for_divides():
    report = model_cycles([scalar()] * 10, SATURN)
    assert report.cycles == 10 and report.vector_instructions == 0
    assert model_cycles([scalar("div", "a0, a0, a1")], SATURN).cycles == SATURN.scalar_div


def test_occupancy_grows_with_lmul_and_vl():
    # vl elements of 32 bits through a 128-bit datapath: vl/4 cycles
    m1 = model_cycles([vec("vfadd.vv", "v8, v8, v16", vl=8, lmul=1)], SATURN)
    m8 = model_cycles([vec("vfadd.vv", "v8, v8, v16", vl=64, lmul=8)], SATURN)
    assert m1.pipe_busy["arith"] == 2 and m8.pipe_busy["arith"] == 16


def test_widening_ops_occupy_twice_the_width():
    plain = model_cycles([vec("vadd.vv", "v8, v8, v16", vl=16, sew=16)], SATURN)
    wide = model_cycles([vec("vwadd.vv", "v8, v12, v16", vl=16, sew=16)], SATURN)
    assert wide.pipe_busy["arith"] == 2 * plain.pipe_busy["arith"]


def test_strided_and_indexed_accesses_cost_per_element():
    n = 16
    unit_load = model_cycles(
        [vec("vle32.v", "v8, (a0)", vl=n, lmul=2, addrs=unit(0x1000, n))], SATURN
    )
    strided = model_cycles(
        [vec("vlse32.v", "v8, (a0), a1", vl=n, lmul=2, addrs=unit(0x1000, n, 256))], SATURN
    )
    indexed = model_cycles(
        [vec("vluxei32.v", "v8, (a0), v16", vl=n, lmul=2, addrs=unit(0x1000, n, 256))], K230
    )
    assert unit_load.pipe_busy["load"] == 4  # 16 x 32 bits / 128
    assert strided.pipe_busy["load"] == 16  # one element per cycle, 16 cache lines
    assert indexed.pipe_busy["load"] == 32  # K230-like: half an element per cycle


def test_segment_accesses_depend_on_the_core():
    n = 8
    seg = [vec("vlseg4e32.v", "v8, (a0)", vl=n, addrs=unit(0x1000, 4 * n))]
    assert (
        model_cycles(seg, SATURN).pipe_busy["load"] == 8 + 3
    )  # full bandwidth + one per extra field
    assert model_cycles(seg, K230).pipe_busy["load"] == 32  # element by element


def test_independent_accumulators_beat_a_dependency_chain():
    chain = [vec("vfmacc.vf", "v8, fa0, v16", vl=4) for _ in range(16)]
    split = [vec("vfmacc.vf", f"v{8 + 2 * (i % 4)}, fa0, v16", vl=4) for i in range(16)]
    assert model_cycles(split, SATURN).cycles < model_cycles(chain, SATURN).cycles


def test_decoupling_overlaps_scalar_and_vector_work():
    stream = []
    for _ in range(20):
        stream += [
            vec("vle32.v", "v8, (a0)", vl=32, lmul=4, addrs=unit(0x1000, 32)),
            scalar(),
            scalar(),
        ]
    coupled = CORE_PRESETS["saturn"].__class__(
        **{**SATURN.__dict__, "decoupled": False, "queue_depth": 0}
    )
    assert model_cycles(stream, SATURN).cycles < model_cycles(stream, coupled).cycles


def test_moving_a_result_to_the_scalar_core_waits_for_the_vector_unit():
    base = [vec("vfredmax.vs", "v8, v16, v8", vl=8)]
    read = base + [vec("vfmv.f.s", "fa0, v8", vl=1), scalar(), scalar()]
    independent = base + [scalar(), scalar(), scalar()]
    assert model_cycles(read, SATURN).cycles > model_cycles(independent, SATURN).cycles


def test_summary_names_core_pipes_and_lmul():
    report = model_cycles(
        [vec("vle32.v", "v8, (a0)", vl=16, lmul=2, addrs=unit(0, 16))] * 3, SATURN
    )
    text = report.summary()
    assert "saturn-like" in text and "load pipe busy" in text and "m2: 3" in text


LOG = """\
core   0: 0x0000000080001000 (0x00a00513) li      a0, 10
core   0: 3 0x0000000080001000 (0x00a00513) x10 0x000000000000000a
core   0: 0x000000008000106c (0xb0202573) csrr    a0, minstret
core   0: 3 0x000000008000106c (0xb0202573) x10 0x000000000000000b
core   0: 0x000000008000108c (0x0d167757) vsetvli a4, a2, e32, m2, ta, ma
core   0: 3 0x000000008000108c (0x0d167757) c8_vstart 0x0000000000000000 x14 0x0000000000000003
core   0: 0x0000000080001090 (0x0206e407) vle32.v v8, (a3)
core   0: 3 0x0000000080001090 (0x0206e407) e32 m2 l3 v8  0x00 mem 0x00000000800010b4 mem 0x00000000800010b8 mem 0x00000000800010bc
core   0: 0x0000000080001094 (0x0205e427) vse32.v v8, (a1)
core   0: 3 0x0000000080001094 (0x0205e427) e32 mf2 l2 mem 0x00000000800011dc 0x00000000 mem 0x00000000800011e0 0x00000000
core   0: 0x00000000800010a0 (0x00008e19) c.sub   a2, a4
core   0: 3 0x00000000800010a0 (0x8e19) x12 0x0000000000000015
core   0: 0x00000000800010ac (0xb0202573) csrr    a0, minstret
core   0: 3 0x00000000800010ac (0xb0202573) x10 0x0000000000000034
core   0: 0x00000000800010b0 (0x00004501) c.li    a0, 0
"""


def test_log_reader_keeps_only_the_region_with_vector_state():
    insns = parse_region(LOG)
    assert [i.mnemonic for i in insns] == ["vsetvli", "vle32.v", "vse32.v", "c.sub"]
    load, store = insns[1], insns[2]
    assert (load.sew, load.lmul, load.vl) == (32, 2.0, 3) and len(load.mem_addrs) == 3
    assert (store.lmul, store.vl) == (0.5, 2) and store.mem_addrs == [0x800011DC, 0x800011E0]


def test_log_reader_reports_traps_and_missing_regions():
    trap = LOG.replace(
        "core   0: 0x00000000800010a0",
        "core   0: exception trap_load_access_fault, epc "
        "0x0000000080001090\ncore   0: 0x00000000800010a0",
    )
    with pytest.raises(TraceError, match="trap_load_access_fault"):
        parse_region(trap)
    with pytest.raises(TraceError, match="kernel region"):
        parse_region(LOG.split("csrr    a0, minstret")[0])
