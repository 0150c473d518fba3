"""Files a worker wrote are read only where they are regular files of bounded size: a FIFO, a
link or a huge file left under a name the harness reads must neither block nor mislead it."""

from __future__ import annotations

import os

import pytest

from autocomp_cuda.harness.files import read_json, read_text
from autocomp_cuda.harness.verdicts import result_malformed
from autocomp_cuda.runtime import worker_files

LIMIT = 2**20


def test_a_regular_file_is_read(tmp_path):
    (tmp_path / "result.json").write_text('{"status": "ok"}')
    assert worker_files.read_bytes(tmp_path / "result.json", LIMIT) == b'{"status": "ok"}'
    assert read_json(tmp_path / "result.json") == {"status": "ok"}


def test_a_fifo_is_refused_at_once_not_waited_on(tmp_path):
    # (no one ever writes it: a blocking open would wait for ever)
    os.mkfifo(tmp_path / "result.json")
    with pytest.raises(worker_files.Unfit, match="not a regular file"):
        worker_files.read_bytes(tmp_path / "result.json", LIMIT)
    assert read_json(tmp_path / "result.json") is None
    assert read_text(tmp_path / "result.json") == ""


def test_a_link_is_not_followed(tmp_path):
    secret = tmp_path / "elsewhere.json"
    secret.write_text('{"status": "ok"}')
    (tmp_path / "result.json").symlink_to(secret)
    with pytest.raises(worker_files.Unfit, match="symbolic link"):
        worker_files.read_bytes(tmp_path / "result.json", LIMIT)
    assert read_json(tmp_path / "result.json") is None


def test_a_file_past_the_limit_is_not_read(tmp_path):
    (tmp_path / "correctness.pt").write_bytes(b"x" * 100)
    with pytest.raises(worker_files.Unfit, match="100 bytes"):
        worker_files.read_bytes(tmp_path / "correctness.pt", limit=99)
    assert len(worker_files.read_bytes(tmp_path / "correctness.pt", limit=100)) == 100


def test_a_missing_file_is_missing(tmp_path):
    with pytest.raises(FileNotFoundError):
        worker_files.read_bytes(tmp_path / "result.json", LIMIT)
    assert read_json(tmp_path / "result.json") is None


def test_a_result_the_worker_could_not_have_written_is_named_malformed():
    honest = {
        "status": "ok",
        "info": {"threads": 1},
        "custom_code": False,
        "input_checksums": [[1.5]],
        "timing": {"candidate_host_ms": [0.5, 0.6], "candidate_event_ms": [None, None]},
    }
    assert result_malformed(honest) == ""
    assert result_malformed(["ok"]) == "a list, not a map"
    assert result_malformed({"message": "ok"}) == "no status"
    # the engine's own failing is never a worker's to report (a free retry, held against no one)
    assert "'status' is 'infra_error'" in result_malformed({"status": "infra_error"})
    assert "'status'" in result_malformed({"status": "fine"})
    for field, value in (
        ("timing", {"candidate_host_ms": ["0.001"]}),
        ("timing", {"candidate_host_ms": [True]}),
        ("timing", [0.5]),
        ("custom_code", 1),
        ("weights_unmatched", [3]),
        ("info", "x"),
        ("message", None),
    ):
        assert f"{field!r}" in result_malformed({**honest, field: value}), (field, value)


def test_a_copy_is_made_a_chunk_at_a_time_and_bounded_like_a_read(tmp_path):
    source, dest = tmp_path / "lib.so", tmp_path / "kept.so"
    source.write_bytes(b"\x7fELF" + bytes(100))
    assert worker_files.copy_file(source, dest, 1 << 20) == 104
    assert dest.read_bytes() == source.read_bytes()
    with open(tmp_path / "sparse.so", "wb") as f:  # (no disk blocks, a GiB of zeros to copy)
        f.truncate(1 << 30)
    with pytest.raises(worker_files.Unfit, match="at most"):
        worker_files.copy_file(tmp_path / "sparse.so", dest, 1 << 20)
    os.mkfifo(tmp_path / "fifo.so")
    with pytest.raises(worker_files.Unfit):
        worker_files.copy_file(tmp_path / "fifo.so", dest, 1 << 20)
