"""``autocomp-core playbook``: see and curate what finished runs learned (``ledger.playbook``)."""

from __future__ import annotations

from pathlib import Path

import click

from ..ledger.playbook import Entry, Playbook, default_path
from .common import emit_json


def _open(path: str | None) -> Playbook:
    return Playbook(Path(path).expanduser() if path else default_path())


PATH_OPTION = click.option(
    "--path", help="The playbook file (default: AUTOCOMP_PLAYBOOK, else the user's).", default=None
)


@click.group()
def playbook() -> None:
    """What finished runs learned: winning schedules and failed plans, per problem."""


@playbook.command("list")
@PATH_OPTION
@click.option("--backend", help="Only this backend's entries.")
@click.option("--json", "as_json", is_flag=True)
def list_entries(path: str | None, backend: str | None, as_json: bool) -> None:
    """One line per entry: id, backend, problem, shapes, speedup, steps and failures."""
    book = _open(path)
    try:
        entries = book.entries(backend)
    finally:
        book.close()
    if as_json:
        emit_json([_summary(e) for e in entries])
        return
    click.echo(f"{len(entries)} entries in {book.path}")
    for e in entries:
        speed = f"{e.speedup:.2f}x" if e.speedup else "-"
        click.echo(
            f"{e.id:>4}  {e.backend}/{e.problem}  shapes {e.shapes}  {speed}  "
            f"{len(e.schedule)} steps, {len(e.failures)} failed plans  (run {e.run})"
        )


@playbook.command()
@click.argument("entry_id", type=int)
@PATH_OPTION
def show(entry_id: int, path: str | None) -> None:
    """An entry in full: its winning steps with their gains, and its failed plans."""
    book = _open(path)
    try:
        e = book.get(entry_id)
    finally:
        book.close()
    if e is None:
        raise click.UsageError(f"playbook: no entry {entry_id}")
    click.echo(f"{e.backend}/{e.problem} (family {e.family}, shapes {e.shapes}, run {e.run})")
    for step in e.schedule:
        click.echo(f"  worked {step['gain']:.2f}x: {step['plan']}")
    for fail in e.failures:
        click.echo(f"  failed ({fail['kind']}): {fail['plan']}  [{fail['reason']}]")


@playbook.command()
@click.argument("out", type=click.Path(dir_okay=False, path_type=Path))
@PATH_OPTION
def export(out: Path, path: str | None) -> None:
    """Write every entry to OUT (JSON Lines: plans and numbers, no programs, no keys)."""
    book = _open(path)
    try:
        n = book.export(out)
    finally:
        book.close()
    click.echo(f"{n} entries written to {out}")


@playbook.command("import")
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@PATH_OPTION
def import_entries(source: Path, path: str | None) -> None:
    """Add the entries of an export (a teammate's, say)."""
    book = _open(path)
    try:
        n = book.import_file(source)
    finally:
        book.close()
    click.echo(f"{n} entries added to {book.path}")


@playbook.command()
@click.argument("entry_id", type=int)
@PATH_OPTION
def forget(entry_id: int, path: str | None) -> None:
    """Remove an entry (a misleading schedule, a run on a wrong setup)."""
    book = _open(path)
    try:
        gone = book.forget(entry_id)
    finally:
        book.close()
    if not gone:
        raise click.UsageError(f"playbook: no entry {entry_id}")
    click.echo(f"entry {entry_id} forgotten")


def _summary(e: Entry) -> dict:
    return {
        "id": e.id,
        "backend": e.backend,
        "problem": e.problem,
        "family": e.family,
        "shapes": e.shapes,
        "speedup": e.speedup,
        "steps": len(e.schedule),
        "failures": len(e.failures),
        "run": e.run,
    }
