# Broken: a tile of 256 partitions.
import neuronxcc.nki.language as nl
from neuronxcc import nki


@nki.jit
def solution(a_tensor, g_tensor):
    out = nl.ndarray(a_tensor.shape, dtype=a_tensor.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a_tensor.shape[0] // 256):
        a = nl.load(a_tensor[i * 256:(i + 1) * 256, :])
        nl.store(out[i * 256:(i + 1) * 256, :], value=nl.square(a))
    return out
