"""The engine's reads and writes of a timing worker's memory (CPU device), on a real process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from autocomp_cuda import worker_memory
from autocomp_cuda.runtime import lockstep as protocol

# A process holding a tensor: it says where its elements lie, then sums them when told.
HOLDER = """
import sys, torch
x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
print(x.data_ptr(), flush=True)
sys.stdin.readline()
print(float(x.sum()), flush=True)
"""


@pytest.fixture
def holder():
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    address = int(proc.stdout.readline())
    yield proc, address
    proc.kill()
    proc.wait()


def test_the_engine_writes_a_workers_inputs_and_reads_its_output(holder):
    proc, address = holder
    memory = worker_memory.Memory(proc.pid)
    try:
        out = worker_memory.parse_output(f"{address} torch.float32 3,4 4,1")
        expected = torch.arange(12, dtype=torch.float32).reshape(3, 4)
        # the elements in row-major order, as the judge rebuilds the tensor from them
        assert memory.read_output(out) == expected.numpy().tobytes()
        # a transposed view of the same elements, gathered in its own row-major order
        view = worker_memory.parse_output(f"{address} torch.float32 4,3 1,4")
        assert memory.read_output(view) == expected.t().contiguous().numpy().tobytes()
        memory.write(address, torch.ones(12, dtype=torch.float32).numpy().tobytes())
    finally:
        memory.close()
    proc.stdin.write("\n")
    proc.stdin.flush()
    assert float(proc.stdout.readline()) == 12.0  # the process sees what the engine wrote


# A process with one memfd mapped twice: the same pages at two addresses.
ALIASED = """
import mmap, os
fd = os.memfd_create("alias")
os.ftruncate(fd, 8192)
first = mmap.mmap(fd, 8192, mmap.MAP_SHARED)
second = mmap.mmap(fd, 8192, mmap.MAP_SHARED)
import ctypes
print(ctypes.addressof(ctypes.c_char.from_buffer(first)), flush=True)
input()
"""


def test_shared_memory_in_a_worker_is_found_from_outside():
    # (an input buffer mapped a second time inside the output lets the engine's write of the
    # input do the copying part of the call: only a shared mapping can alias two addresses)
    proc = subprocess.Popen(
        [sys.executable, "-c", ALIASED], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        address = int(proc.stdout.readline())
        mapped = worker_memory.mappings(proc.pid)
        (there,) = [m for m in mapped if m.overlaps(address, 1)]
        assert there.shared and not there.anonymous
        # this process's Python objects: private anonymous memory (the heap or an arena)
        (ours,) = [m for m in worker_memory.mappings(os.getpid()) if m.overlaps(id(mapped), 1)]
        assert not ours.shared and ours.anonymous
    finally:
        proc.kill()
        proc.wait()


def test_an_address_the_worker_does_not_map_is_an_error_not_a_crash(holder):
    proc, _ = holder
    memory = worker_memory.Memory(proc.pid)
    try:
        with pytest.raises(OSError):
            memory.read_output(worker_memory.parse_output("16 torch.float32 4 1"))
        with pytest.raises(OSError):
            memory.write(16, b"\0" * 8)
    finally:
        memory.close()


@pytest.mark.parametrize(
    "line, why",
    [
        ("12 torch.float32 3,4", "not an output"),
        ("12 torch.object 3 1", "cannot read"),
        ("12 torch.float32 3,4 1", "do not match"),
        ("12 torch.float32 4 1099511627776", "bytes"),
        ("12 torch.float32 1048576,1048576 0,0", "bytes"),  # one float, expanded to 4 TiB
        ("-12 torch.float32 4 1", "not an output"),
    ],
)
def test_a_workers_description_of_its_output_is_checked(line, why):
    with pytest.raises(ValueError, match=why):
        worker_memory.parse_output(line)


def test_an_empty_output_and_a_scalar_are_described():
    assert protocol.describe_output(torch.zeros(0, 3)).split()[1:] == [
        "torch.float32",
        "0,3",
        "3,1",
    ]
    assert worker_memory.parse_output("8 torch.float32 0,3 3,1").extent() == 0
    scalar = worker_memory.parse_output(protocol.describe_output(torch.tensor(2.0)))
    assert (scalar.shape, scalar.stride, scalar.extent()) == ((), (), 1)


@pytest.mark.parametrize(
    "text, staging, why",
    [
        ('{"inputs": [[1, 2]]}', False, None),
        ('{"inputs": [[1, 2]], "staging": [[3, 2]]}', True, None),
        ('{"inputs": [[1, 2]]}', True, "names"),
        ('{"inputs": [[1, -2]]}', False, "pairs"),
        ('{"inputs": [[1, 2.5]]}', False, "pairs"),
        ('{"inputs": [[1, 1e30]]}', False, "pairs"),
        ("[1, 2]", False, "names"),
        ("{", False, "not JSON"),
    ],
)
def test_a_workers_layout_is_checked(text, staging, why):
    if why is None:
        assert worker_memory.parse_layout(text, staging)["inputs"] == [(1, 2)]
    else:
        with pytest.raises(ValueError, match=why):
            worker_memory.parse_layout(text, staging)


def test_a_worker_whose_memory_holds_the_engine_past_the_deadline_is_ended():
    # (a read the kernel cannot finish, e.g. on a region registered with userfaultfd, is
    # stood in for by a wait: what matters is that the worker ends and the engine goes on)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    watchdog = worker_memory.Watchdog(time.monotonic() + 0.2)
    try:
        with watchdog.watching(proc.pid):
            assert proc.wait(timeout=10) == -signal.SIGKILL
        assert watchdog.killed
    finally:
        watchdog.stop()
        proc.kill()
    # a worker the engine is not in the middle of reading is left alone, however late
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    watchdog = worker_memory.Watchdog(time.monotonic() - 1)
    try:
        time.sleep(0.2)
        assert other.poll() is None and not watchdog.killed
    finally:
        watchdog.stop()
        other.kill()
        other.wait()


def _read(tmp_path, name: str, tensor: torch.Tensor) -> dict:
    path = tmp_path / f"{name}.bin"
    path.write_bytes(tensor.contiguous().numpy().tobytes())
    return {
        "path": str(path),
        "dtype": str(tensor.dtype),
        "shape": list(tensor.shape),
        "stride": list(tensor.stride()),
    }


def test_the_judge_compares_the_outputs_the_engine_read_with_the_baselines(tmp_path):
    from autocomp_cuda.runtime import judge_main

    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    base = [torch.randn(4, 3) for _ in range(3)]
    cand = [b.clone() for b in base]
    cand[2][1, 1] += 1.0  # the third timed call wrong
    request = {
        "ref_dir": str(ref_dir),
        "dtype": "float32",
        "stride": [3, 1],
        "samples_read": [_read(tmp_path, f"cand_{r}", t) for r, t in enumerate(cand)],
        "samples_ref_read": [_read(tmp_path, f"base_{r}", t) for r, t in enumerate(base)],
        "samples_tolerance_factor": 2.0,
    }
    answer = judge_main.judge(request, judge_main.References(), torch.device("cpu"))
    assert answer["samples"]["checked"] == 3
    assert answer["samples"]["failure"]["index"] == 2
    request["samples_read"][2] = _read(tmp_path, "cand_2", base[2])
    answer = judge_main.judge(request, judge_main.References(), torch.device("cpu"))
    assert answer["samples"]["failure"] is None
    # a file that is gone (or not what the engine wrote) is unreadable, never a pass
    (tmp_path / "cand_1.bin").unlink()
    with pytest.raises(judge_main.Unreadable, match="timed output 2"):
        judge_main.judge(request, judge_main.References(), torch.device("cpu"))
