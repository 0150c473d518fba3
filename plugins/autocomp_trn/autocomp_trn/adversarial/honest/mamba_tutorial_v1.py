# Honest: the official NKI mamba tutorial's first kernel (mamba_v1), as published: A_i is a 1-D
# [128] tile loaded with an integer index on the state axis, broadcast along the free axis.
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np
from neuronxcc import nki


@nki.jit
def solution(delta, u, A, B, C):
    batch_size, channels, seq_len = delta.shape
    output = nl.ndarray((batch_size, channels, seq_len), dtype=delta.dtype, buffer=nl.shared_hbm)
    _, state_size = A.shape
    assert channels % 128 == 0
    channel_psize = nl.tile_size.pmax
    n_channel_tile = channels // channel_psize
    for i_batch in nl.affine_range(batch_size):
        scanC_accum = nl.zeros((n_channel_tile, nl.par_dim(channel_psize), seq_len), dtype=delta.dtype)
        for i_channel_tile in nl.affine_range(n_channel_tile):
            channel_start = i_channel_tile * channel_psize
            delta_i = nl.load(delta[i_batch, channel_start:channel_start + channel_psize, 0:seq_len])
            u_i = nl.load(u[i_batch, channel_start:channel_start + channel_psize, 0:seq_len])
            for i_state in nl.affine_range(state_size):
                A_i = nl.load(A[channel_start:channel_start + channel_psize, i_state])
                deltaA = nl.exp(delta_i * A_i)
                B_i = nl.load(B[i_batch, i_state:i_state + 1, 0:seq_len])
                deltaU = nisa.tensor_tensor(delta_i, u_i, op=nl.multiply)
                B_i_bcast = B_i.broadcast_to((channel_psize, seq_len))
                deltaBu = deltaU * B_i_bcast
                scan_res = nki.isa.tensor_tensor_scan(deltaA, deltaBu, initial=0, op0=np.multiply, op1=np.add)
                C_i = nl.load(C[i_batch, i_state:i_state + 1, 0:seq_len])
                C_i_bcast = C_i.broadcast_to((channel_psize, seq_len))
                scanC = C_i_bcast * scan_res
                scanC_accum[i_channel_tile, 0:channel_psize, 0:seq_len] += scanC
        for i_channel_tile in nl.affine_range(n_channel_tile):
            channel_start = i_channel_tile * channel_psize
            nl.store(output[i_batch, channel_start:channel_start + channel_psize, 0:seq_len],
                     scanC_accum[i_channel_tile, 0:channel_psize, 0:seq_len])
    return output
