"""Per-generation NeuronCore limits and cost-model constants (nki.md sections 1 and 5).

Three presets: ``trn1`` (NeuronCore-v2, legacy: the original system's published traces ran
there, and NKI 0.3+ no longer supports it), ``trn2`` (NeuronCore-v3) and ``trn3``
(NeuronCore-v4). Each constant names its source beside it: the AWS Neuron documentation page
and the figure. The sources, by the short names used below:

- *NKI arch v2*: "Trainium/Inferentia2 Architecture Guide for NKI" (NeuronCore-v2).
- *NKI arch v3*: "Trainium2 Architecture Guide for NKI" (NeuronCore-v3).
- *NKI arch v4*: "Trainium3 Architecture Guide for NKI" (NeuronCore-v4).
- *Trainium2 arch* / *Trainium3 arch*: "Trainium2 Architecture" / "Trainium3 Architecture"
  (about-neuron/arch/neuron-hardware: the chip tables).
- *DMA intro*: "Introduction to Direct Memory Access (DMA) with NKI".
- *nki.isa ref*: the ``nki.isa`` / ``nki.language`` API reference ("Available only on
  NeuronCore-vN and newer").

A chip holds 8 NeuronCores (v3, v4) or 2 (v2); the emulator models one physical core, so a
chip-wide bandwidth is divided by the cores sharing it. The cost constants marked *calibrated*
were fitted on trn1 against the five published start/best pairs (benchmarks/trn_eval.py prints
the table); no trn2 or trn3 measurement exists to refit them, so the newer presets keep them
("assumed as trn1"). What the presets cannot know is listed in ``UNKNOWN``.
"""

from __future__ import annotations

from dataclasses import dataclass

PMAX = 128  # partitions per SBUF/PSUM tile
PSUM_FMAX = 512  # fp32 elements per partition in one PSUM bank (2 KiB)
PSUM_BANK_BYTES = 2048
PSUM_BANKS = 8
GEMM_STATIONARY_FMAX = 128
GEMM_MOVING_FMAX = 512
BN_STATS_FMAX = 512
SBUF_TILE_FMAX = 64 * 1024  # elements per partition in one SBUF tile (arch guide)
PSUM_TILE_FMAX = 4 * 1024


@dataclass(frozen=True)
class Generation:
    name: str
    nc_version: int  # the NeuronCore version (nki.isa.nc_version gen2/gen3/gen4)
    sbuf_bytes_per_partition: int
    psum_bytes_per_partition: int
    pe_ghz: float
    act_ghz: float
    dve_ghz: float
    pool_ghz: float
    hbm_gbs: float  # this core's share of the device's HBM bandwidth
    shared_port_locks: (
        bool  # NeuronCore-v2: VectorE|GpSimd share the SBUF port, VectorE|ScalarE PSUM
    )
    hbm_bytes: int = 32 << 30  # the device's HBM: no kernel's HBM tensors hold more at once
    # cost constants
    min_ii: int = 64  # minimum initiation interval, engine cycles
    access_cycles: int = 56  # per-instruction operand access overhead (calibrated)
    act_fixed_cycles: int = 96  # extra ScalarE per-instruction cost (function table, calibrated)
    dma_engines: int = 16  # DMA intro: "Each NeuronCore (v2-v4) is paired with 16 DMA engines"
    dma_engine_gbs: float = 27.2  # DMA intro: 27.2 GB/s per engine on NeuronCore-v2 and -v3
    dma_issue_ns: float = 64.0  # per DMA instruction occupancy on its queue (calibrated)
    dma_desc_ns: float = 16.0  # per contiguous descriptor (calibrated)
    # per element of an element-granular transfer (load_transpose2d, gathers): fitted on the
    # tutorial sd_attention chain's transposing loads (nki.md 2.6: "significantly lower DMA
    # bandwidth"; ~30 GB/s for fp32 over the 16 engines)
    dma_elem_ns: float = 2.0
    dma_latency_ns: float = 1600.0  # issue-to-completion latency, overlappable (calibrated)
    dma_efficiency: float = 0.7  # sustained fraction of HBM bandwidth
    sem_ns: float = 64.0  # cross-engine semaphore hop (calibrated)
    launch_ns: float = 4000.0  # kernel launch overhead (calibrated)
    # the most elements per partition one vectorized affine_range loop's fused instruction covers
    # (vectorize.py): the compiler's limit is undocumented; 512 is the documented free-size
    # maximum of the engines' tiles (nl.tile_size.psum_fmax, gemm_moving_fmax, bn_stats_fmax)
    vector_fmax: int = 512
    legacy: bool = False  # NKI 0.3+ does not support it (the NKI FAQ lists Trn2 and Trn3 only)

    @property
    def pe_tflops_bf16(self) -> float:
        return 128 * 128 * 2 * self.pe_ghz / 1000

    @property
    def core(self) -> str:
        return f"NeuronCore-v{self.nc_version}"

    @property
    def exp_elems_per_ns(self) -> float:
        """The most exponentials per ns the core can evaluate: ScalarE's 128 lanes, plus on
        NeuronCore-v4 VectorE's ``nisa.exponential`` at 4x ScalarE's activation rate (NKI arch v4,
        "Fast Exponential Evaluation"). For speed-of-light bounds."""
        act = 128 * self.act_ghz
        return act + (4 * 128 * self.dve_ghz if self.has("exponential") else 0.0)

    def has(self, name: str) -> bool:
        """Whether this core has the instruction, ALU operator or feature ``name``."""
        return self.nc_version >= FIRST_VERSION.get(name, 2)

    def refusal(self, name: str, what: str | None = None) -> str | None:
        """The one-line refusal of ``name`` on this core (``what``: how to call it), or None
        where the core has it. The trusted side raises it with code ``UNSUPPORTED``."""
        if self.has(name):
            return None
        first = FIRST_VERSION[name]
        gens = "/".join(g.name for g in GENERATIONS.values() if g.nc_version >= first)
        return (
            f"{what or name} is available only on NeuronCore-v{first} and newer ({gens}); "
            f"this kernel targets {self.name} ({self.core})"
        )


#: The error code of an instruction, operator or feature the target core does not have.
UNSUPPORTED = "err_unsupported_on_generation"

#: The NeuronCore version that introduced each instruction (``nki.isa``), ALU operator
#: (``nki.language``) or feature; anything absent exists on every version. Source: nki.isa ref
#: and nki.language ref ("Available only on NeuronCore-vN and newer"; the .indirect() view:
#: "Available on NeuronCore-v4 (Trn3) and later"), NKI arch v4 (BF16 matmul results in PSUM).
FIRST_VERSION: dict[str, int] = {
    # instructions
    "range_select": 3,
    "nonzero_with_count": 3,
    "rand_set_state": 3,
    "rand_get_state": 3,
    "sendrecv": 3,
    "core_barrier": 3,
    "activate2": 4,
    "exponential": 4,
    "nc_matmul_mx": 4,
    "quantize_mx": 4,
    "rand2": 4,
    # ALU operators
    "abs_max": 4,
    "abs_min": 4,
    # features
    "indirect": 4,  # tensor indirection (NkiTensor.indirect()) on compute instructions
    "bf16_psum_matmul": 4,  # nc_matmul writing (and accumulating into) a bfloat16 PSUM tile
    "dma_priority": 4,  # dma_copy/dma_transpose priority= (DMA quality of service)
}

TRN1 = Generation(
    "trn1",
    nc_version=2,
    sbuf_bytes_per_partition=192 * 1024,  # NKI arch v2: 24 MiB SBUF, 192 KiB per partition
    psum_bytes_per_partition=16 * 1024,  # NKI arch v2: 2 MiB PSUM, 16 KiB per partition
    pe_ghz=2.8,  # NKI arch v2 engine table: Tensor 2.8 GHz
    act_ghz=1.4,  # Scalar 1.4 GHz
    dve_ghz=1.12,  # Vector 1.12 GHz
    pool_ghz=1.4,  # GpSimd 1.4 GHz
    hbm_gbs=410.0,  # NKI arch v2: 820 GB/s per device, 2 NeuronCores
    shared_port_locks=True,  # NKI arch v2: VectorE and GpSimdE cannot access SBUF in parallel
    hbm_bytes=32 << 30,  # NKI arch v2: 32 GiB per device
    legacy=True,
)
TRN2 = Generation(
    "trn2",
    nc_version=3,
    sbuf_bytes_per_partition=224 * 1024,  # NKI arch v3: "28MiB (or, 128 partitions of 224KiB)"
    psum_bytes_per_partition=16 * 1024,  # NKI arch v3: "PSUM capacity remains the same at 2MiB"
    pe_ghz=2.4,  # NKI arch v3 engine table: Tensor 2.4 GHz
    act_ghz=1.2,  # Scalar 1.2 GHz
    dve_ghz=0.96,  # Vector 0.96 GHz
    pool_ghz=1.2,  # GpSimd 1.2 GHz
    hbm_gbs=362.5,  # Trainium2 arch: 2.9 TB/s per chip, 8 NeuronCore-v3 per chip
    shared_port_locks=False,  # NKI arch v3: "VectorE and GpSimdE can access SBUF in parallel"
    hbm_bytes=96 << 30,  # Trainium2 arch: 96 GiB per chip
)
TRN3 = Generation(
    "trn3",
    nc_version=4,
    sbuf_bytes_per_partition=256 * 1024,  # NKI arch v4: SBUF 32 MiB (128 partitions of 256 KiB)
    psum_bytes_per_partition=16 * 1024,  # NKI arch v4: "PSUM capacity remains the same at 2 MiB"
    pe_ghz=2.4,  # NKI arch v4 engine table: Tensor 2.4 GHz
    act_ghz=1.2,  # Scalar 1.2 GHz
    dve_ghz=1.2,  # Vector 1.2 GHz
    pool_ghz=1.2,  # GpSimd 1.2 GHz
    # Trainium3 arch: 4.9 TB/s per chip, 8 NeuronCore-v4 (NKI arch v4 says 4.7 TB/s; the chip
    # table's figure is used)
    hbm_gbs=612.5,
    shared_port_locks=False,  # assumed as trn2: NKI arch v4 names no change to SBUF access
    hbm_bytes=144 << 30,  # Trainium3 arch: 144 GiB per chip
    dma_engine_gbs=38.4,  # DMA intro: 38.4 GB/s per engine on NeuronCore-v4
)
GENERATIONS = {"trn1": TRN1, "trn2": TRN2, "trn3": TRN3}

#: What the presets cannot know (no published figure), for the docs and model_limits.py.
UNKNOWN = (
    "The per-instruction overheads (minimum initiation interval, operand access, ScalarE's fixed "
    "cost), the DMA issue, descriptor and completion costs, the semaphore hop and the launch "
    "overhead were fitted on trn1 measurements; trn2 and trn3 reuse them, no published figure "
    "gives them for NeuronCore-v3 or -v4.",
    "HBM bandwidth per core is the chip's figure divided by its 8 cores: how the cores share it "
    "under load, and what a logical core (LNC=2) of two physical cores gets, is not modelled.",
    "Of the engines' wider data paths, only the performance modes of tensor_copy and "
    "tensor_scalar are priced (VectorE 2-4x for BF16/FP16 from NeuronCore-v3, also FP8 on -v4; "
    "ScalarE 2x on -v4), VectorE's exponential (4x ScalarE's activation on -v4) and the FP8 "
    "double-row matmul (2x, -v3+); MX matmuls, tensor_tensor's BF16 mode beyond the nisa rate "
    "and TensorE's background transpose on -v4 are not, nor the arbitration of the SBUF bus "
    "VectorE's mode shares with GpSimd.",
    "The DGE (hardware descriptor generation, about 600 ns per instruction on NeuronCore-v3) and "
    "the DMA queues' quality of service on -v4 are not modelled apart from the calibrated "
    "per-transfer cost.",
)
