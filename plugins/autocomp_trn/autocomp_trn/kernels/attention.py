import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np
from neuronxcc import nki


@nki.jit
def solution(q_ref, k_ref, v_ref):
    # Fused attention, nothing leaves the chip: k and v^T resident in SBUF; per 128-query tile a
    # first pass finds the row max from PSUM, a second recomputes each 512-key score block and
    # exponentiates it straight from PSUM (with the row sums in the same ScalarE instruction); the
    # P^T blocks are evacuated alternately by VectorE and ScalarE.
    d, seq_q = q_ref.shape
    seq_k = k_ref.shape[1]
    KB = 512
    nkb = seq_k // KB
    out_ref = nl.ndarray((seq_q, d), dtype=q_ref.dtype, buffer=nl.shared_hbm)
    k_sb = nl.load(k_ref)
    v_sb = nl.load(v_ref)
    v_t = nl.ndarray((seq_k // 128, nl.par_dim(128), d), dtype=nl.bfloat16)
    for j in nl.affine_range(seq_k // 128):
        v_t[j] = nisa.tensor_copy(
            nisa.nc_transpose(v_sb[:, j * 128 : (j + 1) * 128]), dtype=nl.bfloat16
        )
    for i in nl.affine_range(seq_q // 128):
        q_t = nl.load(q_ref[:, i * 128 : (i + 1) * 128])
        part_max = nl.ndarray((nl.par_dim(128), nkb), dtype=nl.float32)
        for b in nl.affine_range(nkb):
            s = nisa.nc_matmul(q_t, k_sb[:, b * KB : (b + 1) * KB])
            part_max[:, b : b + 1] = nisa.tensor_reduce(np.max, s, axis=(1,), keepdims=True)
        neg_max = nisa.tensor_reduce(np.max, part_max, axis=(1,), negate=True, keepdims=True)
        sums = nl.ndarray((nl.par_dim(128), nkb), dtype=nl.float32)
        o_psum = nl.zeros((128, d), nl.float32, buffer=nl.psum)
        for b in nl.affine_range(nkb):
            s = nisa.nc_matmul(q_t, k_sb[:, b * KB : (b + 1) * KB])
            p = nisa.activation(
                op=nl.exp,
                data=s,
                bias=neg_max,
                reduce_op=np.add,
                reduce_res=sums[:, b : b + 1],
                dtype=nl.bfloat16,
            )
            for c in nl.affine_range(KB // 128):
                engine = nisa.scalar_engine if c % 2 else nisa.vector_engine
                p_t = nisa.tensor_copy(
                    nisa.nc_transpose(p[:, c * 128 : (c + 1) * 128]),
                    dtype=nl.bfloat16,
                    engine=engine,
                )
                o_psum += nisa.nc_matmul(p_t, v_t[b * (KB // 128) + c])
        inv_sum = nl.reciprocal(nl.sum(sums, axis=[1]))
        nl.store(out_ref[i * 128 : (i + 1) * 128, :], value=nl.multiply(o_psum, inv_sum))
    return out_ref
