"""The commands about what is installed: ``backends``, ``plugins``, ``problems``, ``models``,
``doctor``, ``new-backend``, and one program's evaluation or a fidelity check (``eval``,
``fidelity``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import click

from ..config import load_config, parse_assignments
from .common import emit_json, fail, loaded_plugins

if TYPE_CHECKING:
    from ..contract.plugins import PluginRegistry
from .common import EXECUTOR_OPTION
from .group import cli


@cli.command()
@click.option("--json", "as_json", is_flag=True)
def backends(as_json: bool) -> None:
    """List installed backends with versions and a health check."""
    from ..contract.plugins import describe_backends

    described = describe_backends(loaded_plugins())
    rows, failures = described["backends"], described["plugin_failures"]
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
    from ..scaffold import write_backend_plugin

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
    from ..contract.backend import EvalContext
    from ..contract.plugins import load_problem
    from ..executors.guarded import evaluate_guarded

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

    from ..fidelity import Outcome, evaluate_programs, format_report, summarize

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
@click.option(
    "--prices",
    "show_prices",
    is_flag=True,
    help="Show each model's price per million tokens and where it came from (asks no server).",
)
@click.option("--json", "as_json", is_flag=True)
def models(
    config_file: str | None, models: tuple[str, ...], show_prices: bool, as_json: bool
) -> None:
    """List configured LLM providers and models, and whether each answers."""
    from ..contract.plugins import build_registry
    from ..llm.client import check_models, price_rows
    from ..llm.settings import LLMSettings

    data = load_config(config_file).model_dump() if config_file else {}
    settings = LLMSettings(**data.get("llm", {})) if data else LLMSettings()
    wanted = list(models) or [
        *data.get("models", {}).get("plan", []),
        *data.get("models", {}).get("code", []),
    ]
    plugins = build_registry(data["plugins"]) if data.get("plugins") else loaded_plugins()
    if show_prices:
        rows = price_rows(settings, plugins.llm_providers(), wanted or None)
        if as_json:
            emit_json(rows)
        else:
            click.echo(format_price_rows(rows))
        return
    rows = anyio.run(check_models, settings, plugins.llm_providers(), wanted or None)
    if as_json:
        emit_json(rows)
        return
    width = max((len(r["model"]) for r in rows), default=0)
    for r in rows:
        detail = r["error"] or f"{r['latency_s']} s, key: {r['key']}"
        click.echo(f"{r['model'].ljust(width)}  {r['status']}  ({detail})")


@cli.command()
@click.argument("backend", required=False)
@EXECUTOR_OPTION
@click.option("--address", help="The Ray cluster's address (ray executor; default: auto).")
@click.option("--json", "as_json", is_flag=True, help="With --executor: the executor as JSON.")
def doctor(backend: str | None, executor: str | None, address: str | None, as_json: bool) -> None:
    """Check every tool the installed backends need; name what is missing and how to install
    it. With --executor: also what the executor runs on (a cluster's nodes, their resources
    and the backends each node has installed)."""
    from ..sandbox import NONE, UID_ONLY, isolation_level

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
    from ..config import ExecutorConfig
    from ..executors import create_executor

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


def format_price_rows(rows: list[dict]) -> str:
    """One line per model: USD per million input / cached input / output tokens, and source."""

    def usd(value) -> str:
        return "-" if value is None else f"{value:g}"

    table = [("model", "input", "cached", "output", "source (USD per million tokens)")]
    table += [
        (
            r["model"],
            usd(r.get("input")),
            usd(r.get("cached_input")),
            usd(r.get("output")),
            r["source"],
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths, strict=True)) + "  " + row[4]
        for row in table
    )
