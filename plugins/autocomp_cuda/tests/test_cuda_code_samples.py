"""The kernel's samples of another process's threads, sorted by the code they ran in: the
engine's evidence that a candidate's own build ran in its timed calls (the CPU device)."""

from __future__ import annotations

import copy
import dataclasses
import mmap
import os
import select
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autocomp_cuda import code_samples, kernel_evidence, worker_memory

# A child that loads a library of "its own build" and, told "lib N" or "python N", spins for
# N ms of its CPU time in the library's code or in the interpreter; "unmap" unmaps it.
CHILD = r"""
import ctypes, sys, time
lib = ctypes.CDLL(sys.argv[1])
lib.spin.argtypes = [ctypes.c_double]
print("ready", flush=True)
for line in sys.stdin:
    what, _, ms = line.strip().partition(" ")
    if what == "lib":
        lib.spin(float(ms))
    elif what == "python":
        start = time.thread_time()
        while (time.thread_time() - start) * 1e3 < float(ms):
            sum(i * i for i in range(1000))
    elif what == "both":  # (N ms in the interpreter, then 20 in the library: one call)
        start = time.thread_time()
        while (time.thread_time() - start) * 1e3 < float(ms):
            sum(i * i for i in range(1000))
        lib.spin(20.0)
    elif what == "poke":  # (a byte of spin's page, away from spin, changed in memory)
        libc = ctypes.CDLL(None)
        libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        start = ctypes.cast(lib.spin, ctypes.c_void_p).value
        page = start & ~4095
        target = page + 4095 if start - page < 3072 else page
        libc.mprotect(page, 4096, 7)
        ctypes.c_ubyte.from_address(target).value ^= 0xFF
        libc.mprotect(page, 4096, 5)
    elif what == "unmap":  # (every page of the library gone from this process)
        libc = ctypes.CDLL(None)
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        for entry in open("/proc/self/maps").read().splitlines():
            if entry.endswith(sys.argv[1]):
                low, high = (int(v, 16) for v in entry.split()[0].split("-"))
                libc.munmap(low, high - low)
    print("done", flush=True)
"""

SPIN = r"""
#include <time.h>
static double cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
double spin(double ms) {
    volatile double x = 0;
    double start = cpu_ms();
    while (cpu_ms() - start < ms)
        for (int i = 0; i < 100000; i++) x += i * 0.5;
    return x;
}
"""


@pytest.fixture
def child(tmp_path):
    (tmp_path / "prebuilt").mkdir()
    library = tmp_path / "prebuilt" / "spin.so"
    (tmp_path / "spin.c").write_text(SPIN)
    subprocess.run(
        ["cc", "-O1", "-shared", "-fPIC", "-o", library, tmp_path / "spin.c"], check=True
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(library)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline() == "ready\n"

    def tell(line: str) -> None:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == "done\n"

    yield proc, tell
    proc.kill()
    proc.wait()


def _sampler(pid: int, work: Path) -> code_samples.Sampler:
    """The child's threads sampled, the builds in ``work/prebuilt`` its own code."""
    if code_samples.available():  # (the engine falls back: see the tests at the end)
        with pytest.raises(OSError):
            code_samples.Sampler(pid)
        pytest.skip(f"this machine cannot sample a process: {code_samples.available()}")
    return code_samples.Sampler(pid, builds=kernel_evidence.placed_builds(work))


def _judge(sampler: code_samples.Sampler, pid: int, theirs=()) -> None:
    """The pages of its builds that ``sampler``'s samples fell on judged as the engine judges
    them, ``theirs`` the baseline's libraries."""
    memory = worker_memory.Memory(pid)
    try:
        own = sampler.own_mappings()
        sampler.judge(
            lambda pages: code_samples.copied_pages(memory.read, own, list(theirs), pages)
        )
    finally:
        memory.close()


def _judged(sampler: code_samples.Sampler, pid: int, theirs=()) -> code_samples.Samples:
    _judge(sampler, pid, theirs)
    return sampler.finish()


def _one_call_judged(child, sampler: code_samples.Sampler, theirs=()) -> code_samples.Samples:
    """The samples of one call of 20 ms in the child's library, judged; the sampler closed."""
    proc, tell = child
    try:
        sampler.start()
        tell("lib 20")
        sampler.stop()
        return _judged(sampler, proc.pid, theirs)
    finally:
        sampler.close()


def test_samples_fall_in_the_build_whose_code_ran(child, tmp_path):
    proc, tell = child
    sampler = _sampler(proc.pid, tmp_path)
    try:
        for _ in range(5):  # (only what runs between start and stop is sampled)
            tell("python 5")
            sampler.start()
            tell("lib 10")
            sampler.stop()
        samples = _judged(sampler, proc.pid)
    finally:
        sampler.close()
    assert samples.taken >= 200 and samples.lost == 0
    assert samples.own_code > 0.8 * samples.taken
    assert kernel_evidence.own_code_ran({"candidate": samples}) == (True, "")


def test_no_sample_falls_in_a_build_that_was_loaded_but_did_not_run(child, tmp_path):
    proc, tell = child
    sampler = _sampler(proc.pid, tmp_path)
    try:
        for _ in range(4):
            sampler.start()
            tell("python 40")
            sampler.stop()
        samples = _judged(sampler, proc.pid)
    finally:
        sampler.close()
    assert samples.taken >= code_samples.CONCLUSIVE
    assert samples.own_code == 0
    seen, why = kernel_evidence.own_code_ran({"candidate": samples})
    assert seen is False and f"none of the {samples.taken} samples" in why
    # too few samples to tell, or too many lost: no verdict from them
    short = code_samples.Samples(hits=[0], own=[0], mappings=samples.mappings[:1], elsewhere=10)
    assert kernel_evidence.own_code_ran({"candidate": short})[0] is None
    samples.lost = samples.taken
    assert kernel_evidence.own_code_ran({"candidate": samples})[0] is None


def test_a_build_unmapped_before_timing_ended_counts_for_nothing(child, tmp_path):
    proc, tell = child
    sampler = _sampler(proc.pid, tmp_path)
    try:
        sampler.start()
        tell("lib 20")
        sampler.stop()
        _judge(sampler, proc.pid)
        judged = copy.deepcopy(sampler.samples)
        tell("unmap")  # (its place may hold anything by the time the samples are judged)
        samples = _judged(sampler, proc.pid)
    finally:
        sampler.close()
    assert samples.taken > 0 and sum(judged.own) > 0
    assert samples.own_code == 0


def test_a_long_call_keeps_its_last_samples_where_its_ring_is_read_as_it_fills(child, tmp_path):
    # (a call longer than its ring holds, its own code last: the eighth red team's D1)
    proc, tell = child
    sampler = _sampler(proc.pid, tmp_path)
    try:
        sampler.start()
        tell("both 800")  # (~8,000 samples in the interpreter first: twice the ring)
        sampler.stop()
        _judge(sampler, proc.pid)
        unread = copy.deepcopy(sampler.samples)
        sampler.start()
        proc.stdin.write("both 800\n")
        proc.stdin.flush()
        while not select.select([proc.stdout], [], [], 0.05)[0]:
            sampler.drain()  # (as the engine does while it waits for "done")
        assert proc.stdout.readline() == "done\n"
        sampler.stop()
        samples = _judged(sampler, proc.pid)
    finally:
        sampler.close()
    assert unread.lost > 0 and sum(unread.own) == 0  # the ring full: the library's samples lost
    assert sum(samples.own) > 100  # (20 ms in the library: ~200 samples, none dropped)


def test_a_file_in_the_build_folder_the_engine_did_not_place_is_not_its_build(child, tmp_path):
    proc, _ = child
    placed = tmp_path / "prebuilt" / "spin.so"
    moved = tmp_path / "elsewhere.so"
    placed.rename(moved)  # (the library the child runs, no longer in the build folder)
    shutil.copy(moved, placed)  # a copy put in its place, as a candidate could
    sampler = _sampler(proc.pid, tmp_path)
    samples = _one_call_judged(child, sampler)
    assert samples.taken > 0 and samples.own_code == 0


def test_pages_that_copy_a_library_the_baseline_runs_are_not_its_own(child, tmp_path):
    proc, _ = child
    sampler = _sampler(proc.pid, tmp_path)
    own = sampler.own_mappings()
    assert own
    # the "baseline" runs the same library from another file: the build is a copy of it
    original = tmp_path / "original.so"
    shutil.copy(tmp_path / "prebuilt" / "spin.so", original)
    info = original.stat()
    theirs = [
        dataclasses.replace(m, device=info.st_dev, inode=info.st_ino, path=str(original))
        for m in own
    ]
    every_page = [p for m in own for p in range(m.low, m.high, mmap.PAGESIZE)]
    memory = worker_memory.Memory(proc.pid)
    try:
        assert code_samples.copied_pages(memory.read, own, theirs, every_page) == set(every_page)
        # a library of other code shares no page with the build
        others = code_samples.code_mappings(os.getpid())
        assert code_samples.copied_pages(memory.read, own, others, every_page) == set()
    finally:
        memory.close()
    samples = _one_call_judged(child, sampler, theirs)
    assert samples.taken > 0 and sum(samples.hits) > 0 and samples.own_code == 0


def test_only_the_pages_samples_fell_on_are_judged_and_each_once(child, tmp_path):
    # (a build padded with 200 MB of pages never run cost the engine 38 s when every page of
    # it was compared: the eleventh red team's a03)
    proc, tell = child
    sampler = _sampler(proc.pid, tmp_path)
    asked: list[list[int]] = []

    def nothing_foreign(pages: list[int]) -> set[int]:
        asked.append(list(pages))
        return set()

    try:
        sampler.start()
        tell("lib 20")
        sampler.stop()
        sampler.judge(nothing_foreign)
        first = sum(sampler.samples.own)
        sampler.start()
        tell("lib 20")
        sampler.stop()
        sampler.judge(nothing_foreign)
    finally:
        sampler.close()
    own = sampler.own_mappings()
    pages = [p for batch in asked for p in batch]
    assert 0 < first < sum(sampler.samples.own)
    assert (
        len(pages) == len(set(pages)) <= sum(sampler.samples.own)
    )  # (each once, where samples fell)
    assert all(any(m.low <= p < m.high for m in own) and p % mmap.PAGESIZE == 0 for p in pages)


def test_a_build_page_changed_in_memory_is_not_its_own(child, tmp_path):
    # (a page of the build made to differ in memory: the tenth red team flipped a byte of a
    # copy of torch's code to escape the digests of torch's pages)
    proc, tell = child
    tell("poke")
    sampler = _sampler(proc.pid, tmp_path)
    samples = _one_call_judged(child, sampler)
    own = sampler.own_mappings()
    hits_there = sum(samples.hits[i] for i, m in enumerate(samples.mappings) if m in own)
    assert hits_there > 0 and samples.own_code == 0


def test_a_candidate_that_cannot_be_sampled_where_the_machine_can_has_no_evidence(
    tmp_path, monkeypatch
):
    refused = code_samples.Samples(error="perf_event_open: Permission denied")
    monkeypatch.setattr(code_samples, "available", lambda: "")  # (this machine can)
    seen, why = kernel_evidence.own_code_ran({"candidate": refused})
    assert seen is False and "could not be sampled" in why
    # a machine that cannot sample any process: the samples say nothing either way
    monkeypatch.setattr(code_samples, "available", lambda: "perf_event_open: No such device")
    seen, why = kernel_evidence.own_code_ran({"candidate": refused})
    assert seen is None and "on this machine" in why


def test_a_process_that_is_gone_cannot_be_sampled():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    with pytest.raises(OSError):
        code_samples.Sampler(proc.pid)


def test_only_executable_file_mappings_are_listed():
    mine = code_samples.code_mappings(int(Path("/proc/self").resolve().name))
    assert mine and all(m.path.startswith("/") and m.high > m.low for m in mine)
    assert [m.low for m in mine] == sorted(m.low for m in mine)


@pytest.mark.asyncio
async def test_calls_too_short_to_show_a_build_running_are_sampled_until_they_can(
    make_backend, monkeypatch
):
    from autocomp_cuda.adversarial import HONEST
    from autocomp_cuda.runtime import lockstep as protocol

    backend = make_backend("cpu")  # (8 timed calls of a tiny C++ ReLU: a handful of samples)
    harness, spec = backend.harness, backend.spec("L1/relu")
    program = next(p for p in HONEST if p.stem == "guarded_compile_relu_cpp").read_text()
    ordered: list[tuple[int, str]] = []
    order = protocol.EngineEnds.order

    def record_order(self, r: int, who: str, seed: int) -> None:
        ordered.append((r, who))
        order(self, r, who, seed)

    monkeypatch.setattr(protocol.EngineEnds, "order", record_order)
    try:
        verdict = await harness.evaluate(spec, program)
    finally:
        await harness.aclose()
    assert verdict.status == "ok", verdict.message
    reps = len(verdict.info["timed_seeds"])
    extra = [r for r, who in ordered if r >= reps]
    assert all(who == "cand" for r, who in ordered if r >= reps)
    assert extra == list(range(reps, reps + len(extra)))  # (after every timed call)
    assert "no_custom_kernel" not in verdict.flags
    if code_samples.available():  # (nothing to sample: the mapped build, and a note saying so)
        assert not extra and any("on this machine" in note for note in verdict.notes)
        return
    samples = verdict.info["own_code_samples"]
    assert samples["own"] > 0  # (in the timed calls, or in as many more as it took)
