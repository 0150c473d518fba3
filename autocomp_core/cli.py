"""The ``autocomp-core`` command line.

Exit status: 0 success, 1 failure, 2 bad input (one line naming what is wrong, printed
before anything is spent). An exception that is not an ``AutocompError`` is a bug: one
line saying so, and its traceback under ``-v``.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import anyio
import click

from .cli_common import emit_json, fail, loaded_plugins
from .config import load_config, parse_assignments
from .errors import AutocompError, ConfigError
from .logs import configure

if TYPE_CHECKING:
    from .plugins import PluginRegistry

#: a reader that closed our output early (``| head``): the status a tool killed by SIGPIPE
#: reports in a shell, 128 + 13, with nothing printed
EXIT_CLOSED_PIPE = 141


def stdout_reader_gone() -> bool:
    """Whether stdout is a pipe or socket whose reader has closed it. A BrokenPipeError
    from anything else (a worker's socket) stays a bug, reported as one."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # no descriptor behind stdout
        return False


def quit_on_closed_pipe() -> NoReturn:
    """Exit quietly: the reader of stdout is gone, which is normal on a shell. Stdout is
    pointed at /dev/null first, so that the interpreter's last flush has nowhere to fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real descriptor behind stdout: nothing to flush into
        pass
    sys.exit(EXIT_CLOSED_PIPE)


class Group(click.Group):
    """Bad input exits 2 and any other ``AutocompError`` 1, each with one line; a bug
    exits 1 with one line, or its traceback under ``-v``. Plugins may add commands that
    are imported only when used (``add_lazy_command``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands: dict[str, str] = {}

    def add_lazy_command(self, name: str, target: str) -> None:
        """Add the command ``target`` (``"module:attribute"``) under ``name``, imported only
        when it runs or its help is shown: what a plugin's commands import stays out of the
        start-up of every other command."""
        self.lazy_commands[name] = target

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = self.lazy_commands.pop(cmd_name, None)
        if target is not None and cmd_name not in self.commands:
            module, _, attribute = target.partition(":")
            try:
                command = getattr(importlib.import_module(module), attribute)
            except (ImportError, AttributeError) as exc:
                fail(f"command {cmd_name}: cannot load {target}: {type(exc).__name__}: {exc}", 1)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ConfigError as exc:
            fail(str(exc))
        except AutocompError as exc:
            fail(str(exc), 1)
        except KeyboardInterrupt:
            click.echo(
                "\ninterrupted: the run is saved; continue with `autocomp-core resume`", err=True
            )
            sys.exit(130)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as exc:
            if isinstance(exc, BrokenPipeError) and stdout_reader_gone():
                quit_on_closed_pipe()
            if ctx.params.get("verbose"):
                raise
            fail(
                f"internal error (a bug): {type(exc).__name__}: {exc} (run with -v for the "
                "traceback)",
                1,
            )


@click.group(cls=Group)
@click.option("--log-json", is_flag=True, help="Log structlog JSON lines to stderr.")
@click.option("-v", "--verbose", is_flag=True, help="Debug logging.")
@click.version_option(package_name="autocomp-core")
def cli(log_json: bool, verbose: bool) -> None:
    """autocomp: LLM-driven beam search that optimizes kernels for accelerators."""
    configure(json_lines=log_json, verbose=verbose)


def _flags(**values: Any) -> dict[str, Any]:
    """Map command-line flags onto the config's nested shape (None = not given)."""
    out: dict[str, Any] = {}
    paths = {
        "backend": "backend",
        "problem": "problem",
        "seed": "seed",
        "run_dir": "run_dir",
        "iterations": "search.iterations",
        "beam_size": "search.beam_size",
        "plans": "search.plans_per_candidate",
        "codes": "search.codes_per_plan",
        "budget_usd": "budget.usd",
        "models": "models.plan",
        "code_models": "models.code",
        "executor": "executor.kind",
    }
    for name, value in values.items():
        if value is None or value == ():
            continue
        node = out
        *parents, leaf = paths[name].split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = list(value) if isinstance(value, tuple) else value
    return out


#: the models and the search's shape, as flags of both optimize commands
SEARCH_OPTIONS = (
    click.option("--model", "models", multiple=True, help="Planning model (repeatable)."),
    click.option("--code-model", "code_models", multiple=True, help="Implementation model."),
    click.option("--iterations", type=int),
    click.option("--beam-size", type=int),
    click.option("--plans", type=int, help="Plans per beam candidate."),
    click.option("--codes", type=int, help="Implementations per plan."),
    click.option("--seed", type=int),
)


def search_options(command: Any) -> Any:
    for option in reversed(SEARCH_OPTIONS):  # so that --help lists them in this order
        command = option(command)
    return command


EXECUTOR_OPTION = click.option(
    "--executor",
    help="Where evaluations run: local (default) or ray (see [executor] for the "
    "cluster's address).",
)


@cli.command()
@click.argument("config_file", required=False, type=click.Path(dir_okay=False))
@click.option("--backend", help="Backend name (see `autocomp-core backends`).")
@click.option("--problem", help="Problem id (see `autocomp-core problems BACKEND`).")
@search_options
@click.option("--budget-usd", type=float)
@click.option("--run-dir", type=click.Path(file_okay=False))
@EXECUTOR_OPTION
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="SECTION.KEY=VALUE",
    help="Override any config key (repeatable).",
)
@click.option("--quiet", is_flag=True, help="No progress output.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def optimize(
    config_file: str | None, overrides: tuple[str, ...], quiet: bool, as_json: bool, **flags: Any
) -> None:
    """Run a beam search. Config: CONFIG_FILE, then flags, then --set overrides."""
    from .runner import optimize as run

    config = load_config(config_file, _flags(**flags), list(overrides))
    summary = run(config, progress=not quiet)
    _print_summary(summary, as_json)


def _print_summary(summary: Any, as_json: bool) -> None:
    if as_json:
        emit_json({"run_dir": str(summary.run_dir), **summary.data})
        return
    from .numbers import metric_text

    d = summary.data
    speed = f" ({d['speedup']:.2f}x)" if d.get("speedup") else ""
    click.echo(
        f"stop reason: {d['stop_reason']}; best {metric_text(d['best_score'])} {d['unit']}{speed}; "
        f"{d['llm_calls']} LLM calls, ${d['cost_usd']:.4f}; "
        f"sandbox isolation: {d.get('isolation')}"
    )
    if d.get("stop_detail"):
        click.echo(
            f"stopped: {d['stop_detail']}; continue with: autocomp-core resume {summary.run_dir}"
        )
    click.echo(f"run directory: {summary.run_dir} (report.md, summary.json, best program)")


@cli.command(name="optimize-suite")
@click.argument("problems", nargs=-1)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    help="Configuration every problem shares (a run config without problem).",
)
@click.option("--backend", help="Backend name (see `autocomp-core backends`).")
@click.option("--all", "every", is_flag=True, help="Every problem the backend ships.")
@click.option(
    "--dir",
    "folder",
    type=click.Path(file_okay=False, path_type=Path),
    help="A folder of problem files the backend loads (KernelBench files for cuda).",
)
@click.option(
    "--suite-dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Where the suite goes: one run directory per problem, and the summary.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    help="Problems searched at once (default: at least 4, more with more slots).",
)
@search_options
@click.option("--budget-usd", type=float, help="For the whole suite.")
@EXECUTOR_OPTION
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="SECTION.KEY=VALUE",
    help="Override any config key (repeatable).",
)
@click.option("--quiet", is_flag=True, help="No progress output.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def optimize_suite(
    problems: tuple[str, ...],
    config_file: str | None,
    every: bool,
    folder: Path | None,
    suite_dir: Path,
    concurrency: int | None,
    overrides: tuple[str, ...],
    quiet: bool,
    as_json: bool,
    **flags: Any,
) -> None:
    """Optimize many problems of one backend: PROBLEMS (ids), --all, or --dir; concurrent
    searches sharing one LLM client, budget and executor. Continue with `resume SUITE_DIR`."""
    from .config import merge_config
    from .suite import optimize_suite as run, select_problems

    data = merge_config(config_file, _flags(**flags), list(overrides))
    chosen = select_problems(data, list(problems), every, folder)
    _print_suite(anyio.run(lambda: run(data, chosen, suite_dir, concurrency, not quiet)), as_json)


def _print_suite(result: Any, as_json: bool) -> None:
    if as_json:
        emit_json({"suite_dir": str(result.suite_dir), **result.data})
        return
    from .suite import SUMMARY_MD

    click.echo((result.suite_dir / SUMMARY_MD).read_text(), nl=False)
    click.echo(
        f"suite directory: {result.suite_dir} (summary.md, summary.json, one run "
        "directory per problem; `autocomp-core report DIR --html` for one page)"
    )


@cli.command()
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="SECTION.KEY=VALUE",
    help="Raise a budget or change llm.*/evaluation.*/executor.* settings (repeatable).",
)
@click.option("--quiet", is_flag=True)
@click.option("--json", "as_json", is_flag=True)
def resume(run_dir: str, overrides: tuple[str, ...], quiet: bool, as_json: bool) -> None:
    """Continue a run, or every run of a suite, after a crash, Ctrl-C or budget stop;
    repeats no answered call and no finished evaluation."""
    from .runner import resume_async
    from .suite import is_suite, resume_suite

    if is_suite(run_dir):
        _print_suite(
            anyio.run(lambda: resume_suite(Path(run_dir), list(overrides), not quiet)), as_json
        )
        return
    _print_summary(
        anyio.run(lambda: resume_async(run_dir, progress=not quiet, overrides=list(overrides))),
        as_json,
    )


@cli.command()
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option("--into", type=click.Path(file_okay=False), help="Directory of the replayed run.")
@click.option(
    "--reevaluate",
    is_flag=True,
    help="Measure every program again instead of reusing recorded evaluations.",
)
@click.option("--quiet", is_flag=True)
@click.option("--json", "as_json", is_flag=True)
def replay(run_dir: str, into: str | None, reevaluate: bool, quiet: bool, as_json: bool) -> None:
    """Re-run a recorded run from its recorded LLM answers (no LLM is called)."""
    from .runner import replay_async

    _print_summary(
        anyio.run(lambda: replay_async(run_dir, into, progress=not quiet, reevaluate=reevaluate)),
        as_json,
    )


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
        from .report.page import write_html_report

        click.echo(write_html_report(Path(run_dir), Path(output) if output else None))
        return
    if output:
        fail("--output: only with --html")
    from .accounting import Ledger
    from .exports import write_exports
    from .runner import load_backend, load_run_config
    from .store import RunStore
    from .translation import Translation

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

    from .report.server import ServeError, read_token_file, serve as serve_runs

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


@cli.command()
@click.option("--json", "as_json", is_flag=True)
def backends(as_json: bool) -> None:
    """List installed backends with versions and a health check."""
    reg = loaded_plugins()
    rows: list[dict[str, Any]] = []
    for name, cls in sorted(reg.backends().items()):
        try:
            backend = cls()
            checks = backend.doctor()
            row = {
                "name": name,
                "version": backend.version,
                "description": cls.description,
                "healthy": all(c.ok for c in checks if c.required),
                "missing": [c.name for c in checks if not c.ok],
                "problems": len(backend.problems()),
            }
        except Exception as exc:  # a broken backend is reported, not fatal
            row = {
                "name": name,
                "version": "?",
                "description": cls.description,
                "healthy": False,
                "missing": [f"{type(exc).__name__}: {exc}"],
                "problems": 0,
            }
        rows.append(row)
    failures = [{"plugin": f.name, "error": f.error} for f in reg.failures]
    if as_json:
        emit_json({"backends": rows, "plugin_failures": failures})
        return
    for r in rows:
        health = "ok" if r["healthy"] else "missing: " + ", ".join(r["missing"])
        click.echo(
            f"{r['name']:<12} {r['version']:<10} {r['problems']:>3} problems  [{health}]  "
            f"{r['description']}"
        )
    if not rows:
        click.echo("no backends installed (pip install autocomp-gemmini, autocomp-rvv, ...)")
    for f in failures:
        click.echo(f"plugin {f['plugin']} failed to load: {f['error']}", err=True)


@cli.command()
@click.option("--json", "as_json", is_flag=True)
def plugins(as_json: bool) -> None:
    """List loaded plugins: version, the hooks each implements and what it registered; and
    every plugin that failed to load, with the reason."""
    reg = loaded_plugins()
    rows = reg.describe()
    failures = [{"plugin": f.name, "error": f.error} for f in reg.failures]
    if as_json:
        emit_json({"plugins": rows, "failures": failures})
        return
    for r in rows:
        what = "; ".join(
            f"{kind}: {', '.join(names)}" for kind, names in r["registered"].items() if names
        )
        click.echo(
            f"{r['distribution'] or r['name']} {r['version'] or ''} ({r['source']}: "
            f"{r['module']})\n  hooks: {', '.join(r['hooks'])}"
            + (f"\n  registered {what}" if what else "")
        )
    for f in failures:
        click.echo(f"FAILED {f['plugin']}: {f['error']}")


@cli.command(name="new-backend")
@click.argument("name")
@click.option(
    "--dir",
    "parent",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    help="Folder to create the package folder in.",
)
@click.option(
    "--pack",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Start from this knowledge pack (a `build-pack --out` folder).",
)
@click.option(
    "--language",
    default="python",
    show_default=True,
    help="Language of the target's programs, as in a code fence (c, cpp, ...).",
)
@click.option(
    "--extension", default=None, help="File extension of programs [default: from --language]."
)
def new_backend(
    name: str, parent: Path, pack: Path | None, language: str, extension: str | None
) -> None:
    """Write a complete backend plugin package for NAME: pyproject.toml with the entry
    point, a backend with typed hardware config and options, a knowledge pack (or the one
    given with --pack), a problem with its baseline and reference, a README and tests that
    pass as generated."""
    from .scaffold import write_backend_plugin

    root = write_backend_plugin(
        name,
        parent,
        installed=loaded_plugins().backends(),
        pack=pack,
        language=language,
        extension=extension,
    )
    click.echo(
        f"wrote {root} (backend {name!r})\nnext:\n  pip install -e '{root}[test]'\n"
        f"  pytest {root}\n  autocomp-core backends"
    )


@cli.command()
@click.argument("backend")
@click.option("--json", "as_json", is_flag=True)
def problems(backend: str, as_json: bool) -> None:
    """List a backend's problems."""
    b = loaded_plugins().make_backend(backend)
    rows = [
        {
            "id": p.id,
            "description": p.description,
            "baseline": str(p.baseline_path) if p.baseline_path else None,
        }
        for p in b.problems()
    ]
    if as_json:
        emit_json(rows)
        return
    for r in rows:
        click.echo(f"{r['id']:<28} {r['description']}")


@cli.command(name="eval")
@click.argument("backend")
@click.argument("problem")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--hw", "hardware", multiple=True, metavar="KEY=VALUE", help="Hardware config.")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE", help="Backend option.")
@click.option("--timeout", type=float, default=120.0, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def eval_(
    backend: str,
    problem: str,
    file: str,
    hardware: tuple[str, ...],
    options: tuple[str, ...],
    timeout: float,
    seed: int,
    as_json: bool,
) -> None:
    """Evaluate one program (for plugin authors): correctness and metric."""
    from .backend import EvalContext
    from .executors.guarded import evaluate_guarded
    from .plugins import load_problem

    b = loaded_plugins().make_backend(
        backend, parse_assignments(hardware), parse_assignments(options)
    )
    prob = load_problem(b, problem)
    code = Path(file).read_text()

    async def run() -> Any:
        async with b:
            return await evaluate_guarded(b, prob, code, EvalContext(seed=seed, timeout_s=timeout))

    result = anyio.run(run)
    data = result.to_dict()
    data["lower_bound"] = b.metric_lower_bound(prob)
    data["seed"] = seed  # with the same program, `--seed` replays the same inputs
    if as_json:
        emit_json(data)
    else:
        state = "correct" if result.correct else f"FAILED ({data['failure']})"
        click.echo(f"{state}: {result.metric} {result.unit}")
        for key, value in result.verification.items():
            click.echo(f"  {key}: {value}")
        if result.feedback:
            click.echo(result.feedback)
    sys.exit(0 if result.correct else 1)


@cli.command()
@click.argument("backend")
@click.option(
    "--source",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Local checkout of the public source of measured programs.",
)
@click.option("--chain", "chain_glob", default="*", show_default=True, help="Chains to run (glob).")
@click.option(
    "--json", "json_file", type=click.Path(dir_okay=False, path_type=Path), help="Write all of it."
)
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--hw", "hardware", multiple=True, metavar="KEY=VALUE", help="Hardware config.")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE", help="Backend option.")
@click.option("--timeout", type=float, default=300.0, show_default=True, help="Per program (s).")
def fidelity(
    backend: str,
    source: Path,
    chain_glob: str,
    json_file: Path | None,
    jobs: int,
    hardware: tuple[str, ...],
    options: tuple[str, ...],
    timeout: float,
) -> None:
    """Compare the backend's metric with published measurements of real programs: per
    program measured, modelled, ratio or why it was refused; per chain Spearman and every
    inversion; overall the pooled Spearman and the ratio distribution. Exit 0 when it ran."""
    from fnmatch import fnmatchcase

    from .fidelity import Outcome, evaluate_programs, format_report, summarize

    b = loaded_plugins().make_backend(
        backend, parse_assignments(hardware), parse_assignments(options)
    )
    programs = [p for p in b.fidelity_programs(source) if fnmatchcase(p.chain, chain_glob)]
    if not programs:
        fail(f"--chain {chain_glob!r}: no measured program in {source} is in such a chain")
    total = len(programs)

    def progress(done: int, outcome: Outcome) -> None:
        p = outcome.program
        result = (
            f"{outcome.modelled:.4g} {b.metric_unit} (measured {p.measured:.4g})"
            if outcome.modelled is not None
            else f"refused: {outcome.refused}"
        )
        click.echo(f"[{done}/{total}] {p.chain} step {p.step} {p.name}: {result}", err=True)

    outcomes = anyio.run(
        lambda: evaluate_programs(b, programs, jobs=jobs, timeout_s=timeout, progress=progress)
    )
    report = summarize(outcomes)
    if json_file is not None:
        report_json = {"backend": backend, "source": str(source), "unit": b.metric_unit, **report}
        json_file.write_text(json.dumps(report_json, indent=2) + "\n")
    click.echo(format_report(report, b.metric_unit))


@cli.command()
@click.argument("config_file", required=False, type=click.Path(dir_okay=False))
@click.option("--model", "models", multiple=True, help="Model string to check (repeatable).")
@click.option("--json", "as_json", is_flag=True)
def models(config_file: str | None, models: tuple[str, ...], as_json: bool) -> None:
    """List configured LLM providers and models, and whether each answers."""
    from .llm.client import check_models
    from .llm.settings import LLMSettings
    from .plugins import build_registry

    data = load_config(config_file).model_dump() if config_file else {}
    settings = LLMSettings(**data.get("llm", {})) if data else LLMSettings()
    wanted = list(models) or [
        *data.get("models", {}).get("plan", []),
        *data.get("models", {}).get("code", []),
    ]
    plugins = build_registry(data["plugins"]) if data.get("plugins") else loaded_plugins()
    rows = anyio.run(check_models, settings, plugins.llm_providers(), wanted or None)
    if as_json:
        emit_json(rows)
        return
    for r in rows:
        click.echo("  ".join(f"{k}={v}" for k, v in r.items()))


@cli.command()
@click.argument("backend", required=False)
@EXECUTOR_OPTION
@click.option("--address", help="The Ray cluster's address (ray executor; default: auto).")
@click.option("--json", "as_json", is_flag=True, help="With --executor: the executor as JSON.")
def doctor(backend: str | None, executor: str | None, address: str | None, as_json: bool) -> None:
    """Check every tool the installed backends need; name what is missing and how to install
    it. With --executor: also what the executor runs on (a cluster's nodes, their resources
    and the backends each node has installed)."""
    from .sandbox import NONE, UID_ONLY, isolation_level

    reg = loaded_plugins()
    if executor:
        _doctor_executor(reg, executor, address, as_json)
        if as_json:
            return
    elif address or as_json:
        fail("--address and --json go with --executor")
    names = [backend] if backend else sorted(reg.backends())
    missing = 0
    level = isolation_level()
    weak = (
        (
            "  -> candidates run without namespaces: run as root, allow unprivileged user "
            "namespaces, or install bubblewrap"
        )
        if level in (NONE, UID_ONLY)
        else ""
    )
    click.echo(f"sandbox isolation: {level}{weak}")
    for name in names:
        b = reg.make_backend(name)
        click.echo(f"{name}:")
        checks = b.doctor()
        for c in checks:
            mark = "ok " if c.ok else "MISSING" if c.required else "absent (optional)"
            fix = f"  -> {c.fix}" if (not c.ok and c.fix) else ""
            click.echo(f"  [{mark}] {c.name} {c.detail}{fix}")
            missing += not c.ok and c.required
        if not checks:
            click.echo("  (no checks)")
    for f in reg.failures:
        click.echo(f"plugin {f.name} failed to load: {f.error}")
        missing += 1
    sys.exit(1 if missing else 0)


def _doctor_executor(reg: PluginRegistry, kind: str, address: str | None, as_json: bool) -> None:
    from .config import ExecutorConfig
    from .executors import create_executor

    options = {"address": address} if address else {}
    executor = create_executor(ExecutorConfig(kind=kind, **options), reg.executors())

    async def describe() -> dict[str, Any]:
        async with executor:
            return await executor.describe()

    data = anyio.run(describe)
    if as_json:
        emit_json(data)
        return
    click.echo(f"executor {kind}:")
    for node in data.get("nodes", [data]):
        resources = node.get("resources") or node.get("capacity") or {}
        click.echo(
            f"  {node.get('address') or node.get('host')}: "
            + ", ".join(f"{k} {v:g}" for k, v in sorted(resources.items()))
        )
        if "backends" in node:
            click.echo(
                "    backends: "
                + (
                    ", ".join(
                        f"{name} ({plugin})" for name, plugin in sorted(node["backends"].items())
                    )
                    or "none"
                )
            )


cli.add_lazy_command("build-pack", "autocomp_core.packbuilder.cli:build_pack")


def main() -> None:
    from .plugins import build_registry

    plugins = build_registry()
    before = len(plugins.failures)
    plugins.call("autocomp_cli_commands", cli=cli)  # a plugin that raises is left out
    for failure in plugins.failures[before:]:
        click.echo(
            f"warning: plugin {failure.name} could not add commands: {failure.error}", err=True
        )
    try:
        cli(prog_name="autocomp-core", obj=plugins)
    finally:
        try:  # what is still buffered goes out now, while a closed pipe can be told apart
            sys.stdout.flush()
        except BrokenPipeError:
            quit_on_closed_pipe()


if __name__ == "__main__":
    main()
