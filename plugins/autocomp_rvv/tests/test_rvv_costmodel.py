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


@pytest.mark.parametrize(
    "negated, plain",
    [
        ("vfnmacc.vv", "vfmacc.vv"),
        ("vfnmsac.vf", "vfmsac.vf"),
        ("vfnmadd.vv", "vfmadd.vv"),
        ("vfnmsub.vv", "vfmsub.vv"),
        ("vnmsac.vv", "vmacc.vv"),
        ("vnmsub.vx", "vmadd.vx"),
    ],
)
def test_negated_multiply_adds_are_plain_width(negated, plain):
    """Only narrowing ops among the vn*/vfn* mnemonics handle double-width elements."""
    cost = {
        m: model_cycles([vec(m, "v8, v16, v24", vl=32, lmul=4)], SATURN).pipe_busy["arith"]
        for m in (negated, plain)
    }
    assert cost[negated] == cost[plain] == 8  # 32 elements x 32 bits / 128


@pytest.mark.parametrize(
    "narrowing", ["vnsrl.wi", "vnsra.wx", "vnclip.wi", "vnclipu.wi", "vfncvt.f.f.w"]
)
def test_narrowing_ops_handle_double_width(narrowing):
    busy = model_cycles([vec(narrowing, "v8, v16, 0", vl=32, sew=16, lmul=2)], SATURN).pipe_busy
    assert busy["arith"] == 8  # 32 source elements of 32 bits through 128 bits


def test_whole_register_stores_are_charged_by_the_bytes_they_move():
    """Spike logs vs<nr>r.v byte by byte: 8 registers of VLEN 256 are 256 bytes, 16 cycles at
    128 bits a cycle, the same as the vse32.v of the same 64 elements."""
    whole = vec("vs8r.v", "v8, (a0)", vl=64, lmul=8, sew=32, addrs=unit(0x1000, 256, 1))
    unit_store = vec("vse32.v", "v8, (a0)", vl=64, lmul=8, sew=32, addrs=unit(0x1000, 64))
    assert model_cycles([whole], SATURN).pipe_busy["store"] == 16
    assert model_cycles([unit_store], SATURN).pipe_busy["store"] == 16


def test_mask_loads_and_stores_are_charged_by_the_bytes_they_move():
    # vl = 2048 mask bits are 256 bytes: 16 cycles at 128 bits a cycle, not a flat 1
    load = vec("vlm.v", "v0, (a0)", vl=2048, sew=8, lmul=8, addrs=unit(0x1000, 256, 1))
    store = vec("vsm.v", "v0, (a0)", vl=2048, sew=8, lmul=8, addrs=unit(0x2000, 256, 1))
    assert model_cycles([load], SATURN).pipe_busy["load"] == 16
    assert model_cycles([store], SATURN).pipe_busy["store"] == 16


def test_log_reader_streams_lines_and_caps_the_region(monkeypatch):
    """The log is read line by line (any iterable), and a region past the caps is refused
    before it is held: the evaluator's memory stays bounded whatever the log's size."""
    from autocomp_rvv import trace

    def lines(stores: int):
        yield "core   0: 0x0000000080000100 (0xb0202573) csrr    a0, minstret\n"
        for _ in range(stores):
            yield "core   0: 0x0000000080000104 (0x0205e427) vse32.v v8, (a1)\n"
            yield (
                "core   0: 3 0x0000000080000104 (0x0205e427) e32 m1 l4"
                + "".join(f" mem 0x{0x1000 + 4 * i:x} 0x00000000" for i in range(4))
                + "\n"
            )
        yield "core   0: 0x0000000080000108 (0xb02025f3) csrr    a1, minstret\n"

    assert len(parse_region(lines(10))) == 10
    monkeypatch.setattr(trace, "MAX_REGION_ACCESSES", 40)
    assert len(parse_region(lines(10))) == 10
    with pytest.raises(trace.RegionTooLarge, match="more than 40 memory accesses"):
        parse_region(lines(11))
    monkeypatch.setattr(trace, "MAX_REGION_INSTRUCTIONS", 5)
    with pytest.raises(trace.RegionTooLarge, match="more than 5 instructions"):
        parse_region(lines(6))
