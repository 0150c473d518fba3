"""Loading plugins into one pluggy ``PluginManager``: the built-in plugins, the modules a
run names (``RunConfig.plugins``, ``AUTOCOMP_PLUGINS``) and the ``autocomp`` entry points.

Every hook is called through ``manager.hook.<name>(...)``, so ``tryfirst``/``trylast``,
wrappers and hook-call monitoring work as in any pluggy host. A plugin that fails to
import, implements a hook that does not exist (``check_pending``), or raises from a hook
is recorded with a one-line reason and left out; the others still load.

The registry also builds backends (``make_backend``): what a plugin's own command line
needs, without loading the engine, the search or the LLM stack.
"""

from __future__ import annotations

import difflib
import importlib
import json
import os
import sys
import time
import traceback
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any, TextIO

import pluggy

from .. import hookspecs
from ..config import validated
from ..errors import ConfigError, PluginError

if TYPE_CHECKING:
    from .backend import Backend, Problem

BUILTIN_PLUGINS = ("autocomp_core.llm.builtin_providers", "autocomp_core.executors")
#: the registration hooks, and what ``plugins`` calls what each registers
REGISTRATIONS = {
    "autocomp_register_backends": "backends",
    "autocomp_register_llm_providers": "llm_providers",
    "autocomp_register_executors": "executors",
}


@dataclass
class PluginInfo:
    name: str  # the name it is registered under: entry-point name, or module name
    module: str
    source: str  # "builtin", "entry point", or "named" (RunConfig.plugins / AUTOCOMP_PLUGINS)
    distribution: str | None = None
    version: str | None = None


@dataclass
class PluginFailure:
    name: str
    error: str  # one line
    detail: str = ""  # the traceback, for --verbose


@dataclass
class PluginRegistry:
    manager: pluggy.PluginManager
    loaded: list[PluginInfo] = field(default_factory=list)
    failures: list[PluginFailure] = field(default_factory=list)

    @property
    def hook(self) -> pluggy.HookRelay:
        return self.manager.hook

    # -- calling hooks --------------------------------------------------------------------
    def call(
        self, hook_name: str, *, leave_out: Collection[object] = (), **kwargs: Any
    ) -> list[Any]:
        """Call a hook (on every plugin but those in ``leave_out``) and concatenate the lists
        its implementations return. A plugin whose implementation raises is unregistered and
        recorded as failed, and the hook is called again without it."""
        while True:
            caller = (
                self.manager.subset_hook_caller(hook_name, remove_plugins=leave_out)
                if leave_out
                else getattr(self.manager.hook, hook_name)
            )
            try:
                return [item for result in caller(**kwargs) for item in (result or [])]
            except Exception as exc:
                plugin = _raising_plugin(caller, exc.__traceback__)
                if plugin is None:  # not raised by a plugin: a bug of ours
                    raise
                name = self.manager.get_name(plugin) or repr(plugin)
                self.manager.unregister(plugin)
                self._fail(name, f"{hook_name} raised {type(exc).__name__}: {exc}")

    def backends(self) -> dict[str, type[Backend]]:
        found: dict[str, type[Backend]] = {}
        for cls in self.call("autocomp_register_backends"):
            found.setdefault(cls.name, cls)
        return found

    def backend_class(self, name: str) -> type[Backend]:
        """The backend ``name``. The built-in and named plugins and the entry point called
        ``name`` are asked first (as ``registry_for_backend`` does on a worker node); the
        other plugins, and everything their backends import, are loaded only when none of
        those registers it: an engine that runs one backend does not pay for the others."""
        others = [
            plugin
            for info in self.loaded
            if info.source == "entry point" and info.name != name
            if (plugin := self.manager.get_plugin(info.name)) is not None
        ]
        for cls in self.call("autocomp_register_backends", leave_out=others):
            if cls.name == name:
                return cls
        backends = self.backends()
        if name not in backends:
            known = ", ".join(sorted(backends)) or "none installed"
            broken = "".join(f"; plugin {f.name} failed to load: {f.error}" for f in self.failures)
            raise PluginError(f"unknown backend {name!r} (installed: {known}){broken}")
        return backends[name]

    def make_backend(
        self,
        name: str,
        hardware: dict[str, Any] | None = None,
        options: dict[str, Any] | None = None,
    ) -> Backend:
        """The backend ``name``, with its ``[hardware]`` and ``[backend_options]`` validated.
        Bad input raises ``ConfigError`` naming the key (``backend_options.reps: ...``)."""
        try:
            cls = self.backend_class(name)
        except PluginError as exc:
            raise ConfigError(f"backend: {exc}") from None
        hw = validated(cls.hardware_config_type, hardware or {}, "hardware")
        opts = validated(cls.options_type, options or {}, "backend_options")
        try:
            return cls(hardware=hw, options=opts)
        except (TypeError, ValueError) as exc:  # a check across fields, made by the backend
            raise ConfigError(f"backend {name}: {exc}") from None

    def llm_providers(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for spec in self.call("autocomp_register_llm_providers"):
            for prefix in (spec.name, *getattr(spec, "aliases", ())):
                found.setdefault(prefix, spec)
        return found

    def executors(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for spec in self.call("autocomp_register_executors"):
            found.setdefault(spec.name, spec)
        return found

    # -- describing -----------------------------------------------------------------------
    def describe(self) -> list[dict[str, Any]]:
        """Per loaded plugin: where it came from, its version, the hooks it implements and
        what it registered (for ``autocomp-core plugins``)."""
        for hook_name in REGISTRATIONS:  # leaves out, and records, a plugin whose hook raises
            self.call(hook_name)
        rows = []
        for info in self.loaded:
            plugin = self.manager.get_plugin(info.name)
            if plugin is None:  # unregistered after loading: listed with the failures
                continue
            callers = self.manager.get_hookcallers(plugin) or []
            others = [p for p in self.manager.get_plugins() if p is not plugin]
            registered: dict[str, list[str]] = {}
            for caller in callers:
                if caller.name in REGISTRATIONS:
                    only = self.manager.subset_hook_caller(caller.name, remove_plugins=others)
                    items = [i for result in only() for i in (result or [])]
                    registered[REGISTRATIONS[caller.name]] = [i.name for i in items]
            rows.append(
                {
                    "name": info.name,
                    "module": info.module,
                    "source": info.source,
                    "distribution": info.distribution,
                    "version": info.version,
                    "hooks": sorted(c.name for c in callers),
                    "registered": registered,
                }
            )
        return rows

    # -- loading --------------------------------------------------------------------------
    def _fail(self, name: str, error: str, detail: str = "") -> None:
        if not any(f.name == name for f in self.failures):
            self.failures.append(
                PluginFailure(name, error.splitlines()[0] if error else "", detail)
            )

    def _add(self, info: PluginInfo, load: Any) -> None:
        """Import (``load()``), register and check one plugin; record why it failed."""
        try:
            module = load()
        except Exception as exc:
            self._fail(info.name, f"{type(exc).__name__}: {exc}", traceback.format_exc())
            return
        try:
            self.manager.register(module, name=info.name)
        except Exception as exc:  # pluggy.PluginValidationError: a hook with wrong arguments
            self._fail(info.name, f"{info.module}: {exc}", traceback.format_exc())
            return
        unknown = _unknown_hooks(self.manager, module)
        if unknown:
            self.manager.unregister(module)
            self._fail(info.name, f"{info.module} implements {_unknown_hook_message(unknown)}")
            return
        self.loaded.append(info)


def extra_plugin_modules() -> tuple[str, ...]:
    """Modules named in ``AUTOCOMP_PLUGINS`` (comma-separated), loaded like entry points.

    Handy for a plugin under development that is not installed yet, and for tests.
    """
    raw = os.environ.get("AUTOCOMP_PLUGINS", "")
    return tuple(m.strip() for m in raw.split(",") if m.strip())


def build_registry(
    modules: tuple[str, ...] | list[str] = (), entry_points_named: Collection[str] | None = None
) -> PluginRegistry:
    """A fresh registry: the built-ins, ``modules`` and ``AUTOCOMP_PLUGINS``, then every
    installed ``autocomp`` entry point (only those of ``entry_points_named`` when given).
    Build one per run and pass it along."""
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    if os.environ.get(TRACE_VARIABLE, "") not in ("", "0"):
        trace_hook_calls(manager)
    registry = PluginRegistry(manager)
    for name in BUILTIN_PLUGINS:
        registry._add(
            PluginInfo(name, name, "builtin", "autocomp-core", _version("autocomp-core")),
            lambda name=name: importlib.import_module(name),
        )
    for name in dict.fromkeys((*modules, *extra_plugin_modules())):
        if not manager.has_plugin(name):
            registry._add(
                PluginInfo(name, name, "named"), lambda name=name: importlib.import_module(name)
            )
    for ep in entry_points(group=hookspecs.PROJECT):
        if entry_points_named is not None and ep.name not in entry_points_named:
            continue
        if manager.has_plugin(ep.name) or any(f.name == ep.name for f in registry.failures):
            continue
        registry._add(
            PluginInfo(
                ep.name,
                ep.value,
                "entry point",
                ep.dist.name if ep.dist else None,
                ep.dist.version if ep.dist else None,
            ),
            ep.load,
        )
    manager.check_pending()  # every plugin with an unknown hook was left out above
    return registry


#: set to 1 to log every hook call, the plugins that answered it, its result and its time
TRACE_VARIABLE = "AUTOCOMP_TRACE_HOOKS"
#: how much of a hook's result (its repr) a trace line shows
TRACE_RESULT_CHARS = 300


def trace_hook_calls(manager: pluggy.PluginManager, out: TextIO | None = None) -> None:
    """Write one JSON line per hook call to ``out`` (stderr): the hook, the plugins that
    implement it in call order, the argument names, the result (or the error) and the
    milliseconds it took; for a plugin author asking why a hook did or did not run."""
    started: list[float] = []

    def before(name: str, impls: Sequence[pluggy.HookImpl], kwargs: Mapping[str, Any]) -> None:
        started.append(time.perf_counter())

    def after(
        outcome: pluggy.Result[Any],
        name: str,
        impls: Sequence[pluggy.HookImpl],
        kwargs: Mapping[str, Any],
    ) -> None:
        took = time.perf_counter() - started.pop()
        error = outcome.exception
        line = {
            "hook": name,
            "plugins": [impl.plugin_name for impl in reversed(impls)],  # pluggy calls last first
            "args": sorted(kwargs),
            "ms": round(took * 1e3, 3),
            **(
                {"error": f"{type(error).__name__}: {error}"}
                if error is not None
                else {"result": repr(outcome.get_result())[:TRACE_RESULT_CHARS]}
            ),
        }
        print(json.dumps(line), file=out or sys.stderr, flush=True)

    manager.add_hookcall_monitoring(before, after)


def registry_for_backend(name: str, modules: tuple[str, ...] | list[str] = ()) -> PluginRegistry:
    """A registry with only what building backend ``name`` needs: the built-ins, ``modules``
    and ``AUTOCOMP_PLUGINS``, and the ``autocomp`` entry point named ``name`` (importing
    every installed plugin costs a worker node seconds). Every entry point when none of
    those registers the backend (a plugin registering it under another name), so that a
    missing backend's error lists the installed ones."""
    registry = build_registry(modules, entry_points_named=(name,))
    if name in registry.backends():
        return registry
    return build_registry(modules)


def make_backend(
    name: str,
    hardware: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
    plugins: PluginRegistry | tuple[str, ...] | list[str] = (),
) -> Backend:
    """A backend by name (``PluginRegistry.make_backend``); ``plugins`` is the run's
    registry, or extra plugin modules to load into a new one. Building a backend loads no
    part of the engine: a plugin's command line that builds one stays light."""
    registry = plugins if isinstance(plugins, PluginRegistry) else build_registry(plugins)
    return registry.make_backend(name, hardware, options)


def load_problem(backend: Backend, ref: str) -> Problem:
    """``backend.load_problem(ref)``, its refusal a ``ConfigError`` naming ``problem``."""
    try:
        return backend.load_problem(ref)
    except (KeyError, FileNotFoundError, ValueError) as exc:
        raise ConfigError(f"problem: {exc.args[0] if exc.args else exc}") from None


def _unknown_hooks(manager: pluggy.PluginManager, plugin: ModuleType) -> list[str]:
    """Hooks a plugin implements that no hookspec declares (a misspelled name)."""
    return sorted(
        caller.name
        for caller in manager.get_hookcallers(plugin) or []
        if not caller.has_spec() and any(not impl.optionalhook for impl in caller.get_hookimpls())
    )


def _unknown_hook_message(unknown: list[str]) -> str:
    known = [name for name in dir(hookspecs) if name.startswith(f"{hookspecs.PROJECT}_")]
    parts = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1)
        parts.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return f"unknown hook {', '.join(parts)}"


def _raising_plugin(caller: pluggy.HookCaller, tb: TracebackType | None) -> object | None:
    """The plugin whose hook implementation raised, from the traceback's innermost frame
    that belongs to one."""
    owners = {impl.function.__code__: impl.plugin for impl in caller.get_hookimpls()}
    found = None
    while tb is not None:
        found = owners.get(tb.tb_frame.f_code, found)
        tb = tb.tb_next
    return found


def _version(distribution: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


def describe_backends(registry: PluginRegistry) -> dict[str, Any]:
    """Each installed backend with its version, problem count and health (``doctor``), and
    the plugins that failed to load: what ``autocomp-core backends`` and the MCP server show."""
    rows: list[dict[str, Any]] = []
    for name, cls in sorted(registry.backends().items()):
        try:
            backend = cls()
            checks = backend.doctor()
            rows.append(
                {
                    "name": name,
                    "version": backend.version,
                    "description": cls.description,
                    "healthy": all(c.ok for c in checks if c.required),
                    "missing": [c.name for c in checks if not c.ok],
                    "problems": len(backend.problems()),
                }
            )
        except Exception as exc:  # a broken backend is listed as such, not fatal
            rows.append(
                {
                    "name": name,
                    "version": "?",
                    "description": cls.description,
                    "healthy": False,
                    "missing": [f"{type(exc).__name__}: {exc}"],
                    "problems": 0,
                }
            )
    failures = [{"plugin": f.name, "error": f.error} for f in registry.failures]
    return {"backends": rows, "plugin_failures": failures}
