"""This project's own kernels.

``OPTIMIZED``: hand-optimized legacy-API (``neuronxcc.nki``) kernels following the original
system's published optimization steps. They are honest candidates: the tests require each to pass
the checks and beat its problem's legacy baseline (``<id>@legacy``) on trn1, and the calibration
benchmark compares them with the published best latencies.

``TRANSLATED``: current-API (``import nki``) translations of the Llama blocks' PyTorch sources,
plain rather than tuned: the tests keep each correct on Trn2 and Trn3, which proves the block
translatable into what the emulator accepts.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent

#: problem id -> file of the optimized kernel
OPTIMIZED = {
    "tutorial/gemm": "gemm.py",
    "tutorial/mamba": "mamba.py",
    "tutorial/attention": "attention.py",
    "tutorial/sd_attention": "sd_attention.py",
    "advanced/conv1d": "conv1d.py",
}


#: problem id -> file of its current-API translation
TRANSLATED = {
    "llama/mlp_prefill": "llama_mlp_prefill.py",
    "llama/mlp_decode_b1": "llama_mlp_decode.py",
    "llama/mlp_decode_b32": "llama_mlp_decode.py",
    "llama/attention": "llama_attention.py",
    "llama/logits": "llama_logits.py",
}


def optimized_source(problem_id: str) -> str:
    return (HERE / OPTIMIZED[problem_id]).read_text()


def translated_source(problem_id: str) -> str:
    return (HERE / TRANSLATED[problem_id]).read_text()
