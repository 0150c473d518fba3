"""The backend tutorial covers the whole contract and names only what exists."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import autocomp_core
from autocomp_core import Backend, Capability, Resources, hookspecs

TUTORIAL = Path(__file__).parents[1] / "docs" / "writing-a-backend.md"


def test_the_tutorial_names_every_part_of_the_contract():
    text = TUTORIAL.read_text()
    members = [
        name
        for name, _ in inspect.getmembers(Backend)
        if not name.startswith("_") and name != "version"
    ]
    hooks = [name for name in dir(hookspecs) if name.startswith("autocomp_")]
    parts = [
        *members,
        "__aenter__",
        *hooks,
        *(f.name for f in dataclasses.fields(Resources)),
        *(f"Capability.{c.name}" for c in Capability),
    ]
    missing = [part for part in parts if part not in text]
    assert not missing, f"docs/writing-a-backend.md does not cover {missing}"


def test_every_name_the_tutorial_imports_from_the_core_exists():
    text = TUTORIAL.read_text()
    listed = re.search(
        r"Everything a plugin needs is importable from `autocomp_core` itself:"
        r"(.*?)\.\n",
        text,
        re.S,
    )
    assert listed, "the tutorial lists the public surface"
    names = re.findall(r"`(\w+)`", listed.group(1))
    assert set(names) == set(autocomp_core.__all__) - {"optimize", "optimize_async", "RunSummary"}
    for match in re.finditer(r"from autocomp_core(?:\.(\w+))? import ([\w, ]+)", text):
        module = (
            autocomp_core
            if match.group(1) is None
            else __import__(f"autocomp_core.{match.group(1)}", fromlist=["_"])
        )
        for name in match.group(2).split(","):
            assert hasattr(module, name.strip()), name
