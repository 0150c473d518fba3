"""Discovering plugins: entry points in group ``autocomp`` plus the built-in ones.

A plugin that fails to import is recorded by name with its error and skipped; the
others still load.
"""
from __future__ import annotations

import importlib
import os
import traceback
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.metadata import entry_points

import pluggy

from . import hookspecs

BUILTIN_PLUGINS = ("autocomp_core.llm.builtin_providers", "autocomp_core.executors")


@dataclass
class PluginFailure:
    name: str
    error: str
    detail: str = ""


@dataclass
class PluginRegistry:
    manager: pluggy.PluginManager
    loaded: dict[str, str] = field(default_factory=dict)  # entry-point name -> distribution version
    failures: list[PluginFailure] = field(default_factory=list)

    @property
    def hook(self):
        return self.manager.hook

    def collect(self, hook_name: str) -> list:
        """Call one registration hook plugin by plugin; a plugin whose hook raises is
        recorded as failed and the others still count."""
        items: list = []
        for impl in getattr(self.hook, hook_name).get_hookimpls():
            try:
                items.extend(impl.function() or [])
            except Exception as exc:
                name = impl.plugin_name
                if not any(f.name == name for f in self.failures):
                    self.failures.append(PluginFailure(name, f"{type(exc).__name__}: {exc}",
                                                       traceback.format_exc()))
        return items

    def backends(self) -> dict[str, type]:
        found: dict[str, type] = {}
        for cls in self.collect("autocomp_register_backends"):
            found.setdefault(cls.name, cls)
        return found

    def backend_class(self, name: str) -> type:
        backends = self.backends()
        if name not in backends:
            known = ", ".join(sorted(backends)) or "none installed"
            hint = ""
            for failure in self.failures:
                if failure.name == name:
                    hint = f"; plugin {name!r} failed to load: {failure.error}"
            raise KeyError(f"unknown backend {name!r} (installed: {known}){hint}")
        return backends[name]

    def llm_providers(self) -> dict[str, object]:
        found: dict[str, object] = {}
        for spec in self.collect("autocomp_register_llm_providers"):
            for prefix in (spec.name, *getattr(spec, "aliases", ())):
                found.setdefault(prefix, spec)
        return found

    def executors(self) -> dict[str, object]:
        found: dict[str, object] = {}
        for spec in self.collect("autocomp_register_executors"):
            found.setdefault(spec.name, spec)
        return found


def extra_plugin_modules() -> tuple[str, ...]:
    """Modules named in ``AUTOCOMP_PLUGINS`` (comma-separated), loaded like entry points.

    Handy for a plugin under development that is not installed yet, and for tests.
    """
    raw = os.environ.get("AUTOCOMP_PLUGINS", "")
    return tuple(m.strip() for m in raw.split(",") if m.strip())


def build_registry(extra_modules: tuple[str, ...] = ()) -> PluginRegistry:
    extra_modules = (*extra_modules, *extra_plugin_modules())
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    registry = PluginRegistry(manager)
    for module_name in (*BUILTIN_PLUGINS, *extra_modules):
        try:
            manager.register(importlib.import_module(module_name), name=module_name)
        except Exception as exc:  # a broken built-in is reported like any plugin
            registry.failures.append(PluginFailure(module_name, f"{type(exc).__name__}: {exc}",
                                                   traceback.format_exc()))
    for ep in entry_points(group=hookspecs.PROJECT):
        if manager.has_plugin(ep.name):
            continue
        try:
            module = ep.load()
            manager.register(module, name=ep.name)
            registry.loaded[ep.name] = ep.dist.version if ep.dist else "unknown"
        except Exception as exc:
            registry.failures.append(PluginFailure(ep.name, f"{type(exc).__name__}: {exc}",
                                                   traceback.format_exc()))
    return registry


@lru_cache(maxsize=1)
def registry() -> PluginRegistry:
    """The process-wide registry, built once."""
    return build_registry()
