"""Judge: compares a candidate's outputs with the reference, in a trusted process of its own.

Run as ``python -m autocomp_cuda.runtime.judge_main IDLE_S`` by the harness (one per device
slot, kept between candidates, outside the sandbox: it reads the reference files, which the
candidate's worker never sees, and the output files that worker left behind after it ended).
So the engine's own process never imports torch.

Protocol: one JSON request per line on stdin, one JSON answer per line on stdout. A request
names the reference dir, the reference output's dtype and strides, the tolerances and the
worker's output files (each output comes with the strides it had when forward returned)::

    {"ref_dir": ..., "dtype": "float32", "stride": [64, 1], "atol": null, "rtol": null,
     "correctness": ".../correctness.pt", "samples": ".../timed_samples.pt" or null,
     "samples_ref_dir": ..., "samples_tolerance_factor": 2.0, "samples_digests": [...] or null}

(the timed calls' outputs are judged against the baseline worker's outputs on the same
inputs, in ``samples_ref_dir``, with the tolerances times ``samples_tolerance_factor``; each
must hash to the digest its worker committed to when the call ended, ``runtime/lockstep.py``.
On the CPU device the engine read every timed output out of the workers itself: then
``samples_read`` and ``samples_ref_read`` list them instead, one per timed call, each as
``{"path", "dtype", "shape", "stride"}``, the elements in row-major order in that file)

and the answer holds, for each list, the first failing output (or none) and the worst error::

    {"correctness": {"checked": 5, "worst": 0.02, "failure": null},
     "samples": {"checked": 4, "worst": 0.01, "failure": {"index": 2, "rep": 17, "reason": ...}},
     "seconds": {"load": ..., "compare": ...}}

or ``{"error": ..., "unreadable": true}`` when an output file is not what the worker writes.
Comparisons run on the device (a GPU compares a 100 M-element output in milliseconds, where
the host took seconds). The reference of the last problems judged stays in host memory.
The judge leaves after ``IDLE_S`` seconds without a request (or when stdin closes); the
harness starts a new one when it needs one.
"""

from __future__ import annotations

import io
import json
import os
import select
import sys
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import torch

from . import common, lockstep, worker_files
from .compare import check_output, error_ratio, tolerance_for

#: Reference dirs whose outputs stay loaded (each holds one output per trial): a problem's,
#: its family shape's, one evaluation's timed calls.
KEEP_REFERENCES = 3


class Unreadable(Exception):
    """An output file that is not what the worker writes (another program touched it)."""


class References:
    """Expected outputs per reference dir, loaded once, most recent kept."""

    def __init__(self) -> None:
        self._dirs: OrderedDict[str, list[torch.Tensor]] = OrderedDict()

    def largest_bytes(self, ref_dir: str) -> int:
        """The size of the largest expected output of ``ref_dir`` (bytes)."""
        sizes = [
            t.numel() * t.element_size() for t in self.trials_of(ref_dir) if type(t) is torch.Tensor
        ]
        return max(sizes, default=0)

    def trial(self, ref_dir: str, k: int) -> torch.Tensor:
        trials = self.trials_of(ref_dir)
        if not 0 <= k < len(trials):
            raise Unreadable(f"an output for trial {k}, which does not exist")
        return trials[k]

    def trials_of(self, ref_dir: str) -> list[torch.Tensor]:
        """The expected output of every trial of ``ref_dir`` (loaded once, most recent kept)."""
        trials = self._dirs.get(ref_dir)
        if trials is None:
            trials = []
            while (Path(ref_dir) / f"trial_{len(trials)}.pt").exists():
                trials.append(
                    torch.load(Path(ref_dir) / f"trial_{len(trials)}.pt", weights_only=True)[
                        "expected"
                    ]
                )
            self._dirs[ref_dir] = trials
            while len(self._dirs) > KEEP_REFERENCES:
                self._dirs.popitem(last=False)
        self._dirs.move_to_end(ref_dir)
        return trials


#: A worker's file of outputs may hold this much beyond four times the outputs' own bytes (an
#: output of a wider dtype, the file format's own); a larger one is not read.
OUTPUTS_FILE_SLACK_BYTES = 64 * 2**20


def _load_worker_file(path: str, limit: int) -> Any:
    """A tensor file the candidate's worker wrote (only a regular file of at most ``limit``
    bytes: ``worker_files``)."""
    return torch.load(
        io.BytesIO(worker_files.read_bytes(path, limit)), weights_only=True, map_location="cpu"
    )


def _outputs(path: str | None, key: str, limit: int) -> list[dict[str, Any]]:
    """The outputs a worker saved (``limit``: the most its file may hold, so a file grown
    huge, even sparse, is refused before it is read: the fifth meter red team's a09)."""
    if not path or not os.path.lexists(path):
        return []
    try:
        items = _load_worker_file(path, limit)
    except Exception as exc:
        raise Unreadable(f"{os.path.basename(path)}: {type(exc).__name__}: {exc}") from exc
    if not isinstance(items, list) or not all(
        isinstance(i, dict) and isinstance(i.get(key), int) for i in items
    ):
        raise Unreadable(f"{os.path.basename(path)} does not hold the worker's list of outputs")
    if key == "trial" and [i["trial"] for i in items] != list(range(len(items))):
        raise Unreadable(f"{os.path.basename(path)} does not hold one output per trial, in order")
    return items


def _read_outputs(listed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The timed outputs the engine read out of a worker (``samples_read``), as tensors."""
    items = []
    for r, entry in enumerate(listed):
        try:
            dtype = getattr(torch, entry["dtype"].removeprefix("torch."))
            data = bytearray(Path(entry["path"]).read_bytes())
            flat = torch.frombuffer(data, dtype=dtype) if data else torch.empty(0, dtype=dtype)
            out = flat.reshape(entry["shape"])
        except (OSError, AttributeError, RuntimeError, ValueError) as exc:
            raise Unreadable(f"timed output {r + 1} as the engine read it: {exc}") from exc
        items.append({"set": r, "rep": r, "out": out, "stride": list(entry["stride"])})
    return items


def _judge_buffers(path: str, ref_path: Path, device: torch.device) -> dict[str, Any]:
    """The buffers the reference's forward updates (training-mode BatchNorm's running
    statistics), as the candidate's first trial left them, against the reference's after its
    first trial: values within tolerance (integers exact). Each is the candidate's buffer of
    the same name and shape, else its first unused one of that shape (a renamed module);
    a candidate that keeps no buffer of that shape fails (it has no such state at all)."""
    expected = torch.load(ref_path, weights_only=True) if ref_path.exists() else {}
    try:
        # (at most about four times the buffers the reference keeps: h69's grown file, here)
        expected_bytes = sum(v.numel() * v.element_size() for v in expected.values())
        limit = OUTPUTS_FILE_SLACK_BYTES + 4 * expected_bytes
        own = _load_worker_file(path, limit) if os.path.lexists(path) else {}
    except Exception as exc:
        raise Unreadable(f"buffers.pt: {type(exc).__name__}: {exc}") from exc
    if not isinstance(own, dict) or not all(type(v) is torch.Tensor for v in own.values()):
        raise Unreadable("buffers.pt does not hold the worker's buffers")
    unused = dict(own)
    renamed, failure = [], None
    for name, value in expected.items():
        mine = unused.pop(name, None)
        if mine is None or mine.shape != value.shape:
            if mine is not None:
                unused[name] = mine
            other = next((k for k, v in unused.items() if v.shape == value.shape), None)
            if other is None:
                failure = {"name": name, "reason": "ModelNew keeps no buffer of its shape"}
                break
            renamed.append(f"{name} as {other}")
            mine = unused.pop(other)
        atol, rtol = tolerance_for(torch.float32, None, None)
        ratio = error_ratio(mine.to(device), value.to(device), 2 * atol, 2 * rtol)
        if ratio > 1.0:
            failure = {"name": name, "reason": f"{ratio:.3g}x the tolerance"}
            break
    return {"checked": len(expected), "renamed": renamed, "failure": failure}


def judge(request: dict[str, Any], refs: References, device: torch.device) -> dict[str, Any]:
    started = time.perf_counter()
    dtype = getattr(torch, request["dtype"])
    read = request.get("samples_read")
    each = refs.largest_bytes(request["ref_dir"])

    def limit(outputs: int) -> int:
        return OUTPUTS_FILE_SLACK_BYTES + 4 * outputs * each

    timed = len(request.get("samples_digests") or [])
    lists = {
        "correctness": _outputs(
            request.get("correctness"), "trial", limit(len(refs.trials_of(request["ref_dir"])))
        ),
        "samples": _read_outputs(read)
        if read
        else _outputs(request.get("samples"), "set", limit(timed)),
    }
    refs_read = _read_outputs(request.get("samples_ref_read") or [])
    loaded = time.perf_counter()
    answer: dict[str, Any] = {}
    for name, items in lists.items():
        worst, failure = 0.0, None
        ref_dir, atol, rtol = request["ref_dir"], request.get("atol"), request.get("rtol")
        if name == "samples" and (read or request.get("samples_ref_dir")):
            ref_dir = request.get("samples_ref_dir") or ref_dir
            factor = float(request.get("samples_tolerance_factor") or 1.0)
            atol, rtol = (factor * t for t in tolerance_for(dtype, atol, rtol))
        digests = request.get("samples_digests") if name == "samples" else None
        if digests is not None and len(digests) != len(items):
            raise Unreadable(
                f"{len(items)} timed outputs where the worker committed to {len(digests)}"
            )
        for index, item in enumerate(items):
            k = item["trial"] if name == "correctness" else item["set"]
            out = item.get("out")
            if digests is not None and (
                type(out) is not torch.Tensor or lockstep.output_digest(out) != digests[index]
            ):
                # changed after the call ended: what the engine's clock timed is not this
                raise Unreadable(f"timed output {index + 1} is not the one its call ended with")
            if name == "samples" and read:  # (the baseline's output of the same call)
                if k >= len(refs_read):
                    raise Unreadable(f"no baseline output for timed call {k + 1}")
                expected = refs_read[k]["out"].to(device)
            else:
                expected = refs.trial(ref_dir, k).to(device)
            check = check_output(
                out.to(device) if type(out) is torch.Tensor else out,
                expected,
                dtype,
                atol,
                rtol,
                item.get("stride"),
                request.get("stride"),
            )
            worst = max(worst, check.error_ratio)
            if not check.ok:
                failure = {
                    "index": index,
                    "rep": item.get("rep"),
                    "reason": check.reason,
                    "error_ratio": check.error_ratio,
                }
                break
        answer[name] = {"checked": len(items), "worst": worst, "failure": failure}
    if request.get("buffers"):
        answer["buffers"] = _judge_buffers(
            request["buffers"], Path(request["ref_dir"]) / common.BUFFERS_FILE, device
        )
    if device.type == "cuda":
        torch.cuda.empty_cache()  # the next candidate on this GPU gets all of its memory
    answer["seconds"] = {"load": loaded - started, "compare": time.perf_counter() - loaded}
    return answer


def main(idle_s: float) -> int:
    protocol = sys.stdout
    sys.stdout = sys.stderr  # nothing but answers goes to the protocol stream
    use_gpu = bool(os.environ.get("CUDA_VISIBLE_DEVICES")) and torch.cuda.is_available()
    device = torch.device("cuda" if use_gpu else "cpu")
    if device.type == "cpu":
        # One intra-op thread: on a busy small machine each operation waited for a second
        # OpenMP thread, and 13 comparisons of 250 K elements took 4 s instead of 0.5 s.
        torch.set_num_threads(1)
    refs = References()
    protocol.write(json.dumps({"ready": True, "device": str(device)}) + "\n")
    protocol.flush()
    while True:
        readable, _, _ = select.select([sys.stdin], [], [], idle_s)
        if not readable:
            return 0  # idle: leave; the harness starts another judge when it needs one
        line = sys.stdin.readline()
        if not line:
            return 0  # the engine is gone
        try:
            answer = judge(json.loads(line), refs, device)
        except Unreadable as exc:
            answer = {"error": str(exc), "unreadable": True}
        except Exception as exc:  # ours to report: the harness turns it into infra_error
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        protocol.write(json.dumps(answer) + "\n")
        protocol.flush()


if __name__ == "__main__":
    sys.exit(main(float(sys.argv[1]) if len(sys.argv) > 1 else 300.0))
