"""What every ``autocomp-core`` command uses: the exit status of bad input, a one-line error,
JSON output, the plugin registry ``main`` loaded, and the flags two commands share."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, NoReturn

import click

if TYPE_CHECKING:
    from ..contract.plugins import PluginRegistry

EXIT_BAD_INPUT = 2


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str))


def loaded_plugins() -> PluginRegistry:
    """The registry ``main`` loaded (a fresh one when the CLI is driven another way)."""
    from ..contract.plugins import build_registry

    root = click.get_current_context().find_root()
    if root.obj is None:
        root.obj = build_registry()
    return root.obj


def config_from_flags(**values: Any) -> dict[str, Any]:
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
        "control": "search.control",
        "reuse": "search.reuse",
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
    click.option(
        "--reuse",
        "reuse",
        multiple=True,
        metavar="RUN_DIR",
        help="Apply this finished run's winning plans to the baseline first (repeatable).",
    ),
    click.option(
        "--control",
        type=click.Choice(["none", "iid", "agent"]),
        help="After the search, spend as much again on a control (iid samples or one agent "
        "conversation) and compare.",
    ),
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


#: where evaluations run, config overrides and output: the last flags of both optimize commands
RUN_OPTIONS = (
    EXECUTOR_OPTION,
    click.option(
        "--set",
        "overrides",
        multiple=True,
        metavar="SECTION.KEY=VALUE",
        help="Override any config key (repeatable).",
    ),
    click.option("--quiet", is_flag=True, help="No progress output."),
    click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON."),
)


def run_options(command: Any) -> Any:
    for option in reversed(RUN_OPTIONS):  # so that --help lists them in this order
        command = option(command)
    return command
