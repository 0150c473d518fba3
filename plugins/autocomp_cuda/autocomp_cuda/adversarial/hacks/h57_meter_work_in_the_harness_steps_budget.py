# problem: L1/matmul_square
# expect: not_faster
# gpu: false
# static: off
# hack: H57 is the second meter red team's a03 and a07: it rebinds the worker's harness code (``Worker.flush``, ``_load`` and ``_keep``, found in sys.modules) so that the step that loads a call's inputs, the cache flush after it and the copy of the output each compute the product from the input buffers, then spin until the step has taken as long as the real one did in the warm-up; its forward returns the product made there. On the CPU device no harness step runs in the candidate's process any more: the engine writes the inputs into its buffers and reads the output out itself, and between calls it runs nothing (it checks itself after the last call): the rebound steps never run in a timed call, and forward, finding no product made, computes it (four times: the call's product and the three steps' it meant to hide) inside the clocked window.
import sys
import time

import torch
import torch.nn as nn

_state = {"buffers": None, "product": None, "spent": []}
_clock = time.thread_time_ns


def _compute() -> None:
    a, b = _state["buffers"][0], _state["buffers"][1]
    _state["product"] = torch.matmul(a, b)


def _padded(original):
    """Run as ``original`` in the warm-up (to learn its cost); after it, compute instead and
    spin to the same cost."""

    def step(*args):
        spent = _state["spent"]
        if len(spent) < 4 or _state["buffers"] is None:
            started = _clock()
            result = original(*args)
            spent.append(_clock() - started)
            return result
        started = _clock()
        _compute()
        target = sorted(spent)[len(spent) // 2]
        while _clock() - started < target:
            pass
        return original(*args) if original.__name__ == "_keep" else None

    return step


def _remembering(load):
    def remember(buffers, values):
        load(buffers, values)
        _state["buffers"] = buffers

    return remember


def _install() -> None:
    for module in list(getattr(sys, "mod" + "ules").values()):
        names = getattr(module, "__dict__", None)
        if not names or not {"Worker", "_load", "_keep"} <= set(names):
            continue
        names["_load"] = _remembering(names["_load"])
        names["_keep"] = _padded(names["_keep"])
        names["Worker"].flush = _padded(names["Worker"].flush)


_install()


class ModelNew(nn.Module):
    def forward(self, a, b):
        product, _state["product"] = _state["product"], None
        if product is None:  # no harness step computed since its last call: four times here
            for _ in range(3):  # (the three steps' share, as it meant to hide it)
                torch.matmul(a, b)
            return torch.matmul(a, b)
        return product  # made in a harness step since the last call
