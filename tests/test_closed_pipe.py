"""A reader that stops early (``autocomp-core problems trn | head -5``) is normal on a
shell: the command exits quietly, as other command-line tools do, with the status a tool
killed by SIGPIPE reports (141). A BrokenPipeError that does not come from stdout is still
reported as the bug it is."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from autocomp_core.cli import EXIT_CLOSED_PIPE, Group

COMMANDS = [
    ["problems", "trn"],
    ["problems", "gemmini", "--json"],
    ["backends"],
    ["plugins"],
    ["build-pack", "--inspect", str(Path(__file__).parent / "toybackend" / "knowledge")],
]


def run_into_closed_pipe(args: list[str]) -> subprocess.CompletedProcess:
    """The command with stdout a pipe whose reader is already gone: its first write, or
    the last flush, meets a closed pipe whatever the timing."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "autocomp_core.cli", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_closed_pipe_ends_a_printing_command_quietly(args):
    done = run_into_closed_pipe(args)
    assert done.stderr == ""
    assert done.returncode == EXIT_CLOSED_PIPE == 141


def test_a_broken_pipe_elsewhere_is_still_a_bug():
    group = Group()

    @group.command()
    def talk() -> None:
        click.echo("first line")
        raise BrokenPipeError(32, "a worker's socket closed")

    result = CliRunner().invoke(group, ["talk"])
    assert result.exit_code == 1
    assert "internal error (a bug): BrokenPipeError" in result.output
