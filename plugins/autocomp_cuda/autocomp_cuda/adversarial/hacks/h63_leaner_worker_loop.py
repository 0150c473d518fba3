# problem: L1/relu
# expect: flagged
# flag: below_resolution
# gpu: false
# static: off
# hack: H63 does the baseline's work but replaces its worker's timing loop (``Worker._serve_moved``, found in sys.modules) with a leaner one of its own: no clocks, no checks, its measured times forged to 0.001 ms. The engine subtracted from the candidate's window the glue around the baseline's call (the order read, the answer written), so the glue a leaner loop saves counted as speed: 3.4-4.2x on this 0.08 ms call with the harness's loop as it was, 1.4-1.8x once that loop was made lean. Now every contender's time is its window less the least glue a window holds (a ping the baseline's worker answers at once): about 1.1x. Now the call's window holds only a message read, the call and a message written (the harness's own work before and after it clocked apart and charged at no less than the baseline's worker's): this loop, written for that protocol, measured 1.05-1.21x on this 0.05 ms call (an honest ReLU 0.75-0.85x beside it), and a call this short, under twenty times the glue a candidate can still shave, is flagged below the harness's resolution and kept out of fast_p.
import sys

import torch
import torch.nn as nn


def _leaner_loop(lockstep):
    def serve(self, calls, contenders, buffers, staging, times):
        ends, model, held = self.ends, contenders["cand"], None
        recv, send = ends.sock.recv, ends.sock.sendall
        with torch.no_grad():
            while calls:
                r, who, _ = ends.receive().split()
                calls -= 1
                held = None
                send(f"{r} {who} armed\n".encode())
                while recv(64) == b"ping\n":
                    send(b"pong\n")
                held = model(*buffers)
                send(b"done\n")
                recv(64)
                send(f"{r} {who} out {lockstep.describe_output(held)}\n".encode())
                times.add(who, 0.001, None, 0.001)
                times.calls_per.append(0)
        ends.await_settle()
        del held

    return serve


for _module in list(getattr(sys, "mod" + "ules").values()):
    _names = getattr(_module, "__dict__", None)
    if _names and "Worker" in _names and hasattr(_names["Worker"], "_serve_moved"):
        _names["Worker"]._serve_moved = _leaner_loop(_names["lockstep"])


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
