"""Shared test setup: the toy backend plugin."""

from __future__ import annotations

import os
import sys
from pathlib import Path

TOY_DIR = Path(__file__).parent / "toybackend"
SAMPLE_PLUGINS = Path(__file__).parent / "sample_plugins"

# The toy backend is a plugin that is not installed: load it by module name, in this
# process and in every subprocess a test starts (the CLI, workers). The sample plugins
# are importable the same way, and loaded only by the tests that name them.
for folder in (SAMPLE_PLUGINS, TOY_DIR):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(TOY_DIR), str(SAMPLE_PLUGINS), os.environ.get("PYTHONPATH", "")) if p
)
_plugins = [m for m in os.environ.get("AUTOCOMP_PLUGINS", "").split(",") if m.strip()]
if "toy_plugin" not in _plugins:
    os.environ["AUTOCOMP_PLUGINS"] = ",".join([*_plugins, "toy_plugin"])
