"""The Trn1/Trn2/Trn3 presets (hardware.py): their figures agree with the published ones they cite,
the backend targets trn2 by default, the instructions a NeuronCore version lacks are refused in one
line, and a kernel's modelled latency follows the generation's clocks and bandwidths."""

from __future__ import annotations

import pytest
from autocomp_core.fidelity import FidelityUnsupported
from trn_testkit import DOUBLE, problem, run

from autocomp_trn import neuron
from autocomp_trn.backend import TrnBackend
from autocomp_trn.emulator.hardware import GENERATIONS, TRN1, TRN2, TRN3, UNSUPPORTED
from autocomp_trn.problems.spec import Input

MIB = 1 << 20


@pytest.mark.parametrize(
    ("gen", "sbuf_mib", "tflops", "hbm_tbs_chip", "cores"),
    [
        # arch guides: SBUF per core; engine tables: TensorE clock; chip tables: HBM per chip
        (TRN1, 24, 91.75, 0.82, 2),
        (TRN2, 28, 79, 2.9, 8),  # "79 BF16/FP16/TF32 ... dense TFLOPS" per NeuronCore-v3
        (TRN3, 32, 79, 4.9, 8),  # "79 BF16/FP16/TF32" per NeuronCore-v4
    ],
)
def test_the_presets_match_the_published_figures(gen, sbuf_mib, tflops, hbm_tbs_chip, cores):
    assert gen.sbuf_bytes_per_partition * 128 == sbuf_mib * MIB
    assert gen.psum_bytes_per_partition * 128 == 2 * MIB  # PSUM 2 MiB on every generation
    assert gen.pe_tflops_bf16 == pytest.approx(tflops, rel=0.01)
    assert gen.hbm_gbs * cores == pytest.approx(hbm_tbs_chip * 1000)
    assert gen.dma_engines == 16


def test_each_generation_names_its_core_and_only_trn1_is_legacy():
    assert [g.core for g in GENERATIONS.values()] == [
        "NeuronCore-v2",
        "NeuronCore-v3",
        "NeuronCore-v4",
    ]
    assert [g.legacy for g in GENERATIONS.values()] == [True, False, False]
    # NeuronCore-v3 lifted the shared SBUF port of VectorE and GpSimd
    assert [g.shared_port_locks for g in GENERATIONS.values()] == [True, False, False]
    assert TRN3.dma_engine_gbs > TRN2.dma_engine_gbs == TRN1.dma_engine_gbs


def test_the_trn3_only_instructions_are_refused_elsewhere_in_one_line():
    for name in ("activate2", "exponential", "abs_max", "abs_min", "indirect"):
        assert TRN3.has(name) and TRN3.refusal(name) is None
        for gen in (TRN1, TRN2):
            assert not gen.has(name)
            message = gen.refusal(name)
            assert message.startswith(f"{name} is available only on NeuronCore-v4 and newer (trn3)")
            assert gen.name in message and "\n" not in message
    assert TRN2.refusal("exponential", "nki.isa.exponential").startswith("nki.isa.exponential ")
    # NeuronCore-v3 additions exist on trn2 and trn3, not on trn1
    assert TRN2.has("range_select") and TRN3.has("range_select")
    assert "(trn2/trn3)" in TRN1.refusal("range_select")
    # what the table does not name exists everywhere
    assert all(g.has("tensor_tensor") for g in GENERATIONS.values())
    assert UNSUPPORTED.startswith("err_")


def test_trn3_can_evaluate_exponentials_faster_for_the_speed_of_light_bound():
    assert TRN2.exp_elems_per_ns == pytest.approx(128 * TRN2.act_ghz)
    assert TRN3.exp_elems_per_ns == pytest.approx(128 * 1.2 + 4 * 128 * 1.2)


def test_the_backend_targets_trn2_by_default_and_accepts_trn3():
    assert TrnBackend({"mode": "emulator"}).generation is TRN2
    trn3 = TrnBackend({"mode": "emulator", "generation": "trn3"})
    assert trn3.generation is TRN3
    rules = trn3.rules(trn3.problems()[0])[0]
    assert "trn3 NeuronCore-v4: SBUF 256 KiB and PSUM 16 KiB per partition" in rules
    assert "(legacy)" in TrnBackend({"generation": "trn1"}).rules(trn3.problems()[0])[0]


def test_doctor_names_the_current_nki_package_and_the_timing_tool():
    backend = TrnBackend({"mode": "emulator"})
    backend.__dict__["neuron_env"] = neuron.NeuronEnv([], 0, v1=True, v2=False, profiler=None)
    checks = {c.name: c for c in backend.doctor()}
    sdk = checks["Neuron SDK NKI (optional)"]
    assert sdk.ok and sdk.detail == "neuronxcc.nki (legacy)" and "pip install nki " in sdk.fix
    timing = checks["Neuron timing (nrtpy or neuron-explorer) (optional)"]
    assert timing.ok and "cannot be timed" in timing.detail  # optional in emulator mode
    backend = TrnBackend({"mode": "neuron"})
    backend.__dict__["neuron_env"] = neuron.NeuronEnv([], 0, False, True, "neuron-explorer")
    checks = {c.name: c for c in backend.doctor()}
    assert checks["Neuron SDK NKI"].detail == "nki"
    assert checks["Neuron timing (nrtpy or neuron-explorer)"].detail == "neuron-explorer"


def test_neuron_mode_has_a_limit_of_its_own():
    env = neuron.NeuronEnv(["/dev/neuron0"], 8, False, True, "neuron-explorer")
    for options, limit in (({}, 600.0), ({"neuron_timeout_s": 900}, 900.0)):
        backend = TrnBackend({"mode": "neuron"}, options)
        backend.__dict__["neuron_env"] = env
        assert backend.neuron_evaluator.timeout_s == limit


def test_the_fidelity_comparison_asks_for_the_generation_it_was_measured_on(tmp_path):
    with pytest.raises(FidelityUnsupported, match=r"measured on trn1.*--hw generation=trn1$"):
        TrnBackend({"mode": "emulator"}).fidelity_programs(tmp_path)


# fifty [128, 512] VectorE multiplies between one load and one store
DVE_BOUND = """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    for k in nl.static_range(50):
        t2 = nisa.tensor_scalar(t, np.multiply, 1.0)
    nl.store(out, value=nl.multiply(t, 2.0))
    return out
"""


def test_the_modelled_time_follows_the_generation():
    busy = {g: run(DVE_BOUND, generation=g, numeric=False)["busy_us"] for g in GENERATIONS}
    # VectorE: 1.12 GHz on trn1, 0.96 on trn2, 1.2 on trn3
    assert busy["trn2"]["dve"] > busy["trn1"]["dve"] > busy["trn3"]["dve"]
    assert busy["trn2"]["dve"] / busy["trn3"]["dve"] == pytest.approx(1.2 / 0.96)


BIG = problem([Input("x", (128, 60 * 1024))], [((128, 60 * 1024), "float32")], lambda x: (2 * x,))


def test_a_tile_over_trn2s_sbuf_fits_trn3s():
    # one 240 KiB-per-partition tile: over trn2's 224 KiB, within trn3's 256 KiB
    body = """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=t)
    return out
"""
    refused = run(body, BIG, generation="trn2", numeric=False)
    assert refused["status"] == "compile_error" and "224 KiB per partition" in refused["message"]
    assert run(body, BIG, generation="trn3", numeric=False)["status"] == "ok"
    doubled = body.replace("value=t)", "value=nl.multiply(t, 2.0))")
    assert run(doubled, DOUBLE, generation="trn3")["status"] == "ok"  # computed right, too


BF16 = problem(
    [Input("x", (128, 512), "bfloat16", "uniform")],
    [((128, 512), "bfloat16")],
    lambda x: (2 * x,),
    atol=1e-2,
    rtol=1e-2,
)
FP32 = problem([Input("x", (128, 512))], [((128, 512), "float32")], lambda x: (2 * x,))
# fifty [128, 512] multiplies in the input's dtype, in SBUF, contiguous: ENGINE runs them
COPIES = """
@nki.jit
def solution(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    for k in nl.static_range(50):
        t2 = nisa.tensor_scalar(t, np.multiply, 1.0, dtype=x.dtype, engine=ENGINE)
    nl.store(out, value=nl.multiply(t, 2.0, dtype=x.dtype))
    return out
"""


def test_the_vector_engines_bf16_performance_mode_from_neuroncore_v3():
    body = COPIES.replace("ENGINE", "nisa.vector_engine")
    dve = {
        (g, name): run(body, spec, generation=g)["busy_us"]["dve"]
        for g in GENERATIONS
        for name, spec in (("bf16", BF16), ("fp32", FP32))
    }
    assert dve["trn1", "bf16"] == pytest.approx(dve["trn1", "fp32"])  # no such mode on v2
    # Trainium2 guide: 4x for tensor_scalar with every operand BF16, in SBUF, contiguous
    assert dve["trn2", "fp32"] / dve["trn2", "bf16"] == pytest.approx(4.0)
    assert dve["trn3", "fp32"] / dve["trn3", "bf16"] == pytest.approx(4.0)


def test_the_scalar_engines_bf16_performance_mode_on_neuroncore_v4():
    body = COPIES.replace("ENGINE", "nisa.scalar_engine")
    act = {g: run(body, BF16, generation=g)["busy_us"]["act"] for g in ("trn2", "trn3")}
    # the same clock: 512 elements plus ScalarE's fixed cost, against 256 plus the same
    fixed = TRN2.act_fixed_cycles
    assert act["trn2"] / act["trn3"] == pytest.approx((512 + fixed) / (256 + fixed), rel=0.02)
