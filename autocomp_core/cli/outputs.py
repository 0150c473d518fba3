"""The commands that show what runs made: ``report`` and ``serve`` (the live dashboard)."""

from __future__ import annotations

from pathlib import Path

import anyio
import click

from .common import fail
from .group import cli


@cli.command()
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option(
    "--html",
    is_flag=True,
    help="Write a self-contained HTML report (plots, beam tree, diffs); RUN_DIR may "
    "also be a folder or suite of runs (one page across them).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Where the HTML report goes (default: RUN_DIR/report.html).",
)
def report(run_dir: str, html: bool, output: str | None) -> None:
    """Rebuild a run's exports from its journal and print report.md."""
    if html:
        from ..report.page import write_html_report

        click.echo(write_html_report(Path(run_dir), Path(output) if output else None))
        return
    if output:
        fail("--output: only with --html")
    from ..engine.translation import Translation
    from ..ledger.accounting import Ledger
    from ..ledger.store import RunStore
    from ..run.exports import write_exports
    from ..run.runner import load_backend, load_run_config

    config = load_run_config(Path(run_dir))
    backend, problem, _ = load_backend(config)
    store = RunStore(run_dir)
    try:
        ledger = Ledger.from_store(store)
        write_exports(
            Path(run_dir),
            store,
            backend,
            problem,
            ledger,
            stop_reason=store.get_meta("stop_reason", "unknown"),
            drop_root=Translation.of(config.translation).drop_root,
        )
    finally:
        store.close()
    click.echo((Path(run_dir) / "report.md").read_text())


@cli.command()
@click.argument("runs_dir", required=False, default="runs", type=click.Path(file_okay=False))
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind; any but 127.0.0.1 needs a token.",
)
@click.option("--port", type=int, default=8750, show_default=True, help="0: any free port.")
@click.option(
    "--token",
    envvar="AUTOCOMP_SERVE_TOKEN",
    help="Required of every request. Prefer the env AUTOCOMP_SERVE_TOKEN or --token-file: "
    "a flag's value is visible to every user in the process list.",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Read the token from this file's first line (chmod 600).",
)
def serve(runs_dir: str, host: str, port: int, token: str | None, token_file: Path | None) -> None:
    """A live dashboard of the runs in RUNS_DIR (default: runs); it never writes to a run.
    Plain HTTP: beyond a trusted network, put a reverse proxy that terminates TLS in front."""
    from click.core import ParameterSource

    from ..report.server import ServeError, read_token_file, serve as serve_runs

    from_flag = (
        click.get_current_context().get_parameter_source("token") is ParameterSource.COMMANDLINE
    )
    try:
        if token_file is not None:
            if token is not None:
                fail("serve: --token-file and --token (or AUTOCOMP_SERVE_TOKEN): give one")
            token, warning = read_token_file(token_file)
            if warning:
                click.echo(f"warning: {warning}", err=True)
        elif from_flag:
            click.echo(
                "warning: --token is visible to every user of this machine in the process "
                "list; set AUTOCOMP_SERVE_TOKEN or use --token-file instead",
                err=True,
            )
        anyio.run(
            lambda: serve_runs(
                Path(runs_dir), host, port, token, ready=lambda line: click.echo(line, err=True)
            )
        )
    except ServeError as exc:
        fail(str(exc))
    except OSError as exc:  # the port is taken, the address is not ours, ...
        fail(f"serve: cannot listen on {host}:{port}: {exc.strerror or exc}")
    except KeyboardInterrupt:
        pass
