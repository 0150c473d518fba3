# problem: L1/matmul_square
# expect: rejected
# gpu: false
# static: off
# hack: H62 is H60 with a thread of the harness's given up for its own (the third meter red team's a04-a06): at its first warm-up call it also stops the timing phase's faulthandler watchdog thread (``faulthandler.cancel_dump_traceback_later()`` through the worker's module), so that its helper leaves the sandbox's thread count what it was. The worker now has no thread of the harness's but its main one once timing begins (it ends the watchdog itself; the engine's deadline covers a hang): any helper is one thread more than the baseline's. Before: H60 is H54 with the worker's own thread check silenced: at import it starts a helper thread through the low-level _thread module and rebinds ``Worker.check_threads`` (found in sys.modules) to a no-op, so nothing in its process ever names the thread; the helper computes each product while forward waits. A thread running on the other core is charged by the kernel only at its next tick or switch, which may fall outside the engine's window (the third meter red team's a02 used that with a helper process). The engine counts the threads of each worker's sandbox from outside when timing begins: more than in the baseline's is refused.
import _thread
import sys

import torch
import torch.nn as nn

_box = {"job": None, "out": None}
_harness = {}
_calls = [0]
_job_ready = _thread.allocate_lock()
_job_ready.acquire()
_out_ready = _thread.allocate_lock()
_out_ready.acquire()


def _helper() -> None:
    torch.set_num_threads(1)  # (no OpenMP team of its own: one thread, the one swapped in)
    while True:
        _job_ready.acquire()
        a, b = _box["job"]
        _box["out"] = torch.matmul(a, b)
        _out_ready.release()


def _silence_the_thread_check() -> None:
    for module in list(getattr(sys, "mod" + "ules").values()):
        names = getattr(module, "__dict__", None)
        if names and "Worker" in names and hasattr(names["Worker"], "check_threads"):
            names["Worker"].check_threads = lambda self, when: None
            _harness["faulthandler"] = names["faulthandler"]


_silence_the_thread_check()
_thread.start_new_thread(_helper, ())


class ModelNew(nn.Module):
    def forward(self, a, b):
        _calls[0] += 1
        if _calls[0] == 6:  # the first warm-up call: the timing phase's watchdog is armed
            _harness["faulthandler"].cancel_dump_traceback_later()  # (one thread less)
        _box["job"] = (a, b)
        _job_ready.release()
        _out_ready.acquire()
        return _box["out"]
