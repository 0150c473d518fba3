"""The ``autocomp-core`` command group: how every command fails, and the lazy commands
plugins add.

Exit status: 0 success, 1 failure, 2 bad input (one line naming what is wrong, printed
before anything is spent). An exception that is not an ``AutocompError`` is a bug: one
line saying so, and its traceback under ``-v``.
"""

from __future__ import annotations

import importlib
import os
import select
import sys
from typing import Any, NoReturn

import click

from ..errors import AutocompError, ConfigError
from ..logs import configure
from .common import fail

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


cli.add_lazy_command("mcp", "autocomp_core.mcp.command:mcp")  # the MCP server (docs/mcp.md)
