import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np
from neuronxcc import nki


@nki.jit
def solution(q_ref, k_ref, v_ref):
    # SD self-attention without element-granular DMAs: q and k tiles are loaded contiguously and
    # transposed on TensorE; scores never leave PSUM (row max pass, then exp with scale and bias
    # and the row sums in one ScalarE instruction per 512-key block); P^T evacuation alternates
    # between VectorE and ScalarE.
    seqlen, d = q_ref.shape
    out_ref = nl.ndarray((seqlen, d), dtype=q_ref.dtype, buffer=nl.shared_hbm)
    scale = 0.125
    KB = 512
    nkb = seqlen // KB
    k_t = nl.ndarray((nl.par_dim(d), seqlen), dtype=nl.bfloat16)
    v_sb = nl.ndarray((seqlen // 128, nl.par_dim(128), d), dtype=nl.bfloat16)
    for j in nl.affine_range(seqlen // 128):
        k_tile = nl.load(k_ref[j * 128 : (j + 1) * 128, :], dtype=nl.bfloat16)
        k_t[:, j * 128 : (j + 1) * 128] = nisa.tensor_copy(
            nisa.nc_transpose(k_tile), dtype=nl.bfloat16
        )
        v_sb[j] = nl.load(v_ref[j * 128 : (j + 1) * 128, :], dtype=nl.bfloat16)
    for i in nl.affine_range(seqlen // 128):
        q_tile = nl.load(q_ref[i * 128 : (i + 1) * 128, :], dtype=nl.bfloat16)
        q_t = nisa.tensor_copy(nisa.nc_transpose(q_tile), dtype=nl.bfloat16)
        part_max = nl.ndarray((nl.par_dim(128), nkb), dtype=nl.float32)
        for b in nl.affine_range(nkb):
            s = nisa.nc_matmul(q_t, k_t[:, b * KB : (b + 1) * KB])
            part_max[:, b : b + 1] = nisa.tensor_reduce(np.max, s, axis=(1,), keepdims=True)
        neg_max = nisa.tensor_scalar(
            nisa.tensor_reduce(np.max, part_max, axis=(1,), keepdims=True), np.multiply, -scale
        )
        sums = nl.ndarray((nl.par_dim(128), nkb), dtype=nl.float32)
        o_psum = nl.zeros((128, d), nl.float32, buffer=nl.psum)
        for b in nl.affine_range(nkb):
            s = nisa.nc_matmul(q_t, k_t[:, b * KB : (b + 1) * KB])
            p = nisa.activation(
                op=nl.exp,
                data=s,
                bias=neg_max,
                scale=scale,
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
                o_psum += nisa.nc_matmul(p_t, v_sb[b * (KB // 128) + c])
        inv_sum = nl.reciprocal(nl.sum(sums, axis=[1]))
        nl.store(out_ref[i * 128 : (i + 1) * 128, :], value=nl.multiply(o_psum, inv_sum))
    return out_ref
