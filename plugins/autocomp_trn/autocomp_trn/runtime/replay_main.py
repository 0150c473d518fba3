"""The trusted replay process: validate the trace, compute outputs on fresh inputs, check, cost.

    python -m autocomp_trn.runtime.replay_main -    (on stdin: the request's JSON line, then the trace)

Runs only trusted code (this plugin); the trace it reads is untrusted data. It runs in a sandbox
too, for the hard time and memory limits, in a fresh dir the tracing process never could write,
and reads no file a candidate wrote. Prints one JSON object on stdout.
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path

from autocomp_trn.judge import judge
from autocomp_trn.problems.catalog import spec_by_id


def main(argv: list[str]) -> int:
    if argv[1] == "-":  # the request's line, then the trace as the tracing process wrote it
        request = json.loads(sys.stdin.buffer.readline())
        trace_text = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    else:
        request = json.loads(Path(argv[1]).read_bytes())
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
    # the trace's tensors decide how much the replay holds: running out is the kernel's failure
    except MemoryError:
        emit(
            {
                "status": "rejected",
                "code": "err_replay_memory",
                "message": "the kernel's tensors need more memory than the evaluator allows "
                "(backend_options.memory_mb)",
            }
        )
        sys.exit(0)
    except (
        Exception
    ):  # a bug on the trusted side: reported as the evaluator's failure, not the kernel's
        emit({"status": "infra_error", "message": traceback.format_exc()[-3000:]})
        sys.exit(0)
