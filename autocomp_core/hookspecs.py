"""Every hook a plugin can implement. Project name ``autocomp``; entry-point group ``autocomp``.

A plugin is a normal package whose ``pyproject.toml`` declares::

    [project.entry-points.autocomp]
    mytarget = "my_package.plugin"

and whose ``my_package.plugin`` module defines functions decorated with
``autocomp_core.hookimpl`` named after the specs below. Each registration hook returns a
list; the engine concatenates the lists of all plugins. A function named like a hook that
does not exist here is an error naming the module and the hook (``autocomp-core plugins``
shows it). ``docs/writing-a-backend.md`` walks through writing one.
"""

# mypy: disable-error-code="empty-body"
# (a hookspec has a docstring for a body: pluggy calls the implementations, never the spec)
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import click

PROJECT = "autocomp"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def autocomp_register_backends() -> list[type]:
    """Return ``Backend`` subclasses (see ``autocomp_core.contract.backend.Backend``).

    Each class has a unique ``name``; the engine instantiates it with the run's
    ``[hardware]`` and ``[backend_options]``, validated through the class's
    ``hardware_config_type`` and ``options_type``.
    """


@hookspec
def autocomp_register_llm_providers() -> list[Any]:
    """Return ``ProviderSpec`` objects (see ``autocomp_core.llm.providers``).

    A provider spec names the provider prefix used in model strings (``openai`` in
    ``openai::gpt-5-mini``) and builds the client that serves its models.
    """


@hookspec
def autocomp_register_executors() -> list[Any]:
    """Return ``ExecutorSpec`` objects (see ``autocomp_core.executors``).

    An executor decides where evaluations run: this machine (``local``) or a Ray cluster
    (``ray``), both built in, or what a plugin adds (Slurm, Kubernetes, a board farm). The
    engine sends it every evaluation of a run (``[executor] kind = ...`` or ``--executor``)
    with the backend's ``Resources`` as what one evaluation needs.
    """


@hookspec
def autocomp_cli_commands(cli: click.Group) -> None:
    """Add ``click`` commands to the ``autocomp-core`` command group: ``cli.add_command(c)``,
    or ``cli.add_lazy_command(name, "module:attribute")`` to import them only when used."""
