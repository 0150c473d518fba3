# problem: L1/matmul_square
# expect: rejected
# gpu: false
# static: off
# hack: H54 starts a helper thread at import through the low-level _thread module (no threading.Thread object, so threading.enumerate never lists it) and hands it every product through a queue; forward waits for its answer. The work is the same, but it runs on a thread the worker's own accounting did not know of: the kernel's list of the process's threads was taken when timing began, after the import, so the thread was part of the reference. Now it is taken before the candidate is imported.
import _thread

import torch
import torch.nn as nn

_box = {"job": None, "out": None}
_job_ready = _thread.allocate_lock()
_job_ready.acquire()
_out_ready = _thread.allocate_lock()
_out_ready.acquire()


def _helper() -> None:
    while True:
        _job_ready.acquire()
        a, b = _box["job"]
        _box["out"] = torch.matmul(a, b)
        _out_ready.release()


_thread.start_new_thread(_helper, ())


class ModelNew(nn.Module):
    def forward(self, a, b):
        _box["job"] = (a, b)
        _job_ready.release()
        _out_ready.acquire()
        return _box["out"]
