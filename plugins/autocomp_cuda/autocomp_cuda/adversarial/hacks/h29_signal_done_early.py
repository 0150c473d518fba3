# problem: L1/matmul_square
# expect: rejected
# gpu: false
# static: off
# hack: H29 answers its timed calls before they are done: the worker tells the engine a call is over on a socket the candidate's process holds too, so the candidate finds that connection (the garbage collector lists every object) and, at the start of each timed call, sends the answer itself with a digest of its choosing, then computes; the engine's clock stops early (the baseline's next call would run beside the rest). The digest commits to an output the candidate does not have yet, and the worker's own answer then arrives out of turn.
import gc
import socket

import torch
import torch.nn as nn

_state = {"order": None}


def _connection():
    for obj in gc.get_objects():
        if isinstance(obj, socket.socket) and obj.fileno() >= 0:
            if obj.family == socket.AF_UNIX and obj.getpeername().endswith("clock.sock"):
                return obj
    return None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, a, b):
        self.calls += 1
        conn = _connection()
        if conn is not None and self.calls > 8:  # past the trials and the warm-up: timed
            r = self.calls - 9
            conn.sendall(f"{r} cand {'0' * 64}\n".encode())
        return torch.matmul(a, b)
