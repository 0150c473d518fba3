"""Per-generation NeuronCore limits and cost-model constants (nki.md sections 1 and 5).

The limits are the architecture's. The cost constants marked *calibrated* were fitted on
the five published start/best pairs (benchmarks/trn_eval.py prints the table); the rest
are the published per-instruction figures.
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
    dma_engines: int = 16
    dma_engine_gbs: float = 27.2
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

    @property
    def pe_tflops_bf16(self) -> float:
        return 128 * 128 * 2 * self.pe_ghz / 1000


TRN1 = Generation(
    "trn1",
    sbuf_bytes_per_partition=192 * 1024,
    psum_bytes_per_partition=16 * 1024,
    pe_ghz=2.8,
    act_ghz=1.4,
    dve_ghz=1.12,
    pool_ghz=1.4,
    hbm_gbs=410.0,
    shared_port_locks=True,
)
TRN2 = Generation(
    "trn2",
    sbuf_bytes_per_partition=224 * 1024,
    psum_bytes_per_partition=16 * 1024,
    pe_ghz=2.4,
    act_ghz=1.2,
    dve_ghz=0.96,
    pool_ghz=1.2,
    hbm_gbs=360.0,
    shared_port_locks=False,
    hbm_bytes=96 << 30,
)
GENERATIONS = {"trn1": TRN1, "trn2": TRN2}
