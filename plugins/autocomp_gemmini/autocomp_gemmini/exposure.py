"""What the candidate's compiler may read: the toolchain, the work dir, and nothing else we can hide.

A preprocessor reads whatever file a directive names (`#include`, `#embed`, spellings no text
screen foresees) and can send it back through printf strings or diagnostics. So the candidate is
compiled against copies of the headers it needs in its work dir, and every other dir is shown
empty (the sandbox's `hidden`): the checkout, the user's home and caches, /etc, /opt and so on.
The sandbox keeps the engine's own environment visible (its interpreter runs the launcher): the
import path's dirs stay readable (where the checkout is on it, the checkout but this plugin's
package), and the walk hides everything beside them.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from . import toolchain

#: The system's own dirs: the toolchain and its libraries, and what the kernel mounts.
SYSTEM_DIRS = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/dev"}
SYSTEM_DIRS |= {"/sys", "/tmp", "/run"}
#: The headers the candidate's code is compiled with (prelude: gemmini.h, runtime.h).
CANDIDATE_HEADERS = (toolchain.INCLUDE_DIR / "gemmini.h", toolchain.RUNTIME_DIR / "runtime.h")


def copy_headers(work: Path) -> list[str]:
    """Copy the candidate's headers into `work` (gemmini_params.h is written there already);
    the -I options that find them."""
    for header in CANDIDATE_HEADERS:
        shutil.copyfile(header, work / header.name)
    return [f"-I{work}"]


def hidden_dirs(visible: list[Path]) -> list[Path]:
    """Every dir to show empty: all but the system dirs, the `visible` ones and what the
    sandbox itself needs (the engine's interpreter and import path: its launcher runs there),
    whose ancestors' other entries are hidden in turn; and the plugin's package dir."""
    keep = {os.path.realpath(p) for p in visible}
    needed = {os.path.realpath(sys.prefix), os.path.realpath(sys.executable)}
    needed |= {os.path.realpath(p) for p in sys.path if p and os.path.isdir(p)}
    needed |= keep
    hidden: list[Path] = []

    def walk(folder: str) -> None:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False) or entry.path in SYSTEM_DIRS:
                continue
            real = os.path.realpath(entry.path)
            if any(real == n or real.startswith(n + os.sep) for n in needed):
                continue
            if any(n.startswith(real + os.sep) for n in needed):
                walk(entry.path)
            else:
                hidden.append(Path(entry.path))

    walk("/")
    # The plugin's own sources (harness, problems, shipped solutions) even where the engine's
    # import path shows the checkout: the candidate's compile reads copies of its headers.
    package = Path(os.path.realpath(toolchain.PACKAGE_DIR))
    if str(package) not in needed:
        hidden.append(package)
    return hidden
