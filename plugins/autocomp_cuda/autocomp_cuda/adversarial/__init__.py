"""The adversarial suite: one candidate per known harness hack, plus honest-but-unusual kernels.

Each file starts with ``# key: value`` lines: ``problem`` (suite id), ``expect`` (``rejected``,
``flagged`` — correct but excluded from fast_p — ``not_faster`` — a program that does more
work than its baseline while it tries to look faster: refused, or measured slower — or
``ok``), ``gpu`` (needs a CUDA device),
optionally ``also`` (candidate failures a ``rejected`` one may end in first, comma-separated),
``static: off`` (run with the static rules disabled, so a runtime check must
catch it) and ``settings`` (JSON overrides of harness settings).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).parent
HACKS = sorted((ROOT / "hacks").glob("*.py"))
HONEST = sorted((ROOT / "honest").glob("*.py"))


def header(path: Path) -> dict[str, str]:
    found = {}
    for line in path.read_text().splitlines():
        m = re.match(r"#\s*(\w+):\s*(.*)$", line)
        if not m:
            break
        found[m.group(1)] = m.group(2).strip()
    return found


#: Problems in KernelBench's format and habits, loaded as a KernelBench checkout: a fixture
#: whose problem is ``kb/L{level}/{number}`` is evaluated with this as ``kernelbench_path``.
KERNELBENCH = ROOT / "kernelbench"


def settings_of(path: Path) -> dict:
    settings = json.loads(header(path).get("settings", "{}"))
    if header(path).get("problem", "").startswith("kb/"):
        settings.setdefault("kernelbench_path", str(KERNELBENCH))
    return settings
