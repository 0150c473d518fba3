"""The trusted replay process: validate the trace, compute outputs on fresh inputs, check, cost.

    python -m autocomp_trn.runtime.replay_main request.json

Runs only trusted code (this plugin); the trace it reads is untrusted data. It runs in a sandbox
too, for the hard time and memory limits. Prints one JSON object on stdout.
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path

from autocomp_trn.judge import judge
from autocomp_trn.problems.catalog import spec_by_id


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[1]).read_text())
    trace_text = Path(request["trace"]).read_text()
    return emit(
        judge(
            spec_by_id(request["problem"]),
            trace_text,
            request["seeds"],
            request["generation"],
            bool(request.get("full")),
            bool(request.get("numeric", True)),
        )
    )


def emit(obj: dict) -> int:
    sys.stdout.write("\n" + json.dumps(obj) + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except MemoryError:
        emit({"status": "infra_error", "message": "the replay ran out of memory"})
        sys.exit(0)
    except (
        Exception
    ):  # a bug on the trusted side: reported as the evaluator's failure, not the kernel's
        emit({"status": "infra_error", "message": traceback.format_exc()[-3000:]})
        sys.exit(0)
