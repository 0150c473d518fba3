"""The sandboxed tracing process: run an untrusted kernel on opaque handles, write its trace.

    python -m autocomp_trn.runtime.trace_main -    (the request on stdin)

The request holds the kernel's source, its entry point, the input shapes and dtypes and the
keyword arguments. The NKI modules exist only in this process (``emulator/modules.py``); the
kernel's module gets restricted builtins whose ``__import__`` admits only NKI, NumPy and a few
pure standard modules. The kernel is called twice on fresh handles; the two traces must be
identical (no state kept across calls). ``status.json`` says how it went; ``trace.json`` holds
the trace, both in the working dir. Both are written after the kernel's code has finished
running, but the kernel ran in this process: the engine treats both as the candidate's (it reads
them without following links, and the replay checks the trace).
"""

from __future__ import annotations

import builtins
import json
import sys
import traceback
from pathlib import Path

from autocomp_trn.emulator import harness, modules
from autocomp_trn.emulator.indexing import NkiError
from autocomp_trn.runtime import ALLOWED_IMPORTS

REMOVED_BUILTINS = (
    "open",
    "exec",
    "eval",
    "compile",
    "globals",
    "locals",
    "vars",
    "getattr",
    "setattr",
    "delattr",
    "dir",
    "breakpoint",
    "input",
    "memoryview",
    "help",
    "exit",
    "quit",
    "__loader__",
    "__spec__",
)
KERNEL_FILE = "kernel.py"
REFUSAL_CODES = {
    "err_forbidden_import",
    "err_monkeypatch",
    "err_nondeterministic_trace",
    "err_trace_too_long",
    "err_state_across_calls",
}


def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
    root = name.split(".")[0]
    if level != 0 or root not in ALLOWED_IMPORTS:
        allowed = ", ".join(sorted(ALLOWED_IMPORTS - {"__future__"}))
        raise NkiError(
            f"kernels may import only {allowed} (tried {name!r})", "err_forbidden_import"
        )
    modules.note_import(root)  # the API the kernel speaks; both at once is refused
    return builtins.__import__(name, globals, locals, fromlist, level)


def restricted_builtins() -> dict:
    allowed = {k: v for k, v in vars(builtins).items() if k not in REMOVED_BUILTINS}
    allowed["__import__"] = guarded_import
    return allowed


def kernel_frames(exc: BaseException) -> str:
    """The traceback lines from the kernel's own file, and the error."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == KERNEL_FILE]
    lines = [f"  line {f.lineno}, in {f.name}: {f.line}" for f in frames[-4:]]
    return "\n".join([*lines, f"{type(exc).__name__}: {exc}"])


def trace_source(
    source: str,
    entry: str,
    inputs: list,
    kwargs: dict,
    generation: str,
    sbuf_bytes: int,
    max_events: int,
) -> tuple[dict, str | None]:
    """Run the kernel twice under the tracer; (status, trace JSON text or None)."""
    modules.install(generation, sbuf_bytes)
    try:
        code = compile(source, KERNEL_FILE, "exec")
    except SyntaxError as exc:
        return status("compile_error", f"SyntaxError: {exc.msg}", "err_syntax", exc.lineno or 0)
    namespace = {
        "__name__": "kernel",
        "__builtins__": restricted_builtins(),
        "__file__": KERNEL_FILE,
    }
    specs = [(n, tuple(s), d) for n, s, d in inputs]
    try:
        exec(code, namespace)
        kernel = namespace.get(entry)
        if kernel is None or not callable(kernel):
            return status(
                "compile_error",
                f"the program defines no kernel function named {entry!r}",
                "err_missing_entry",
            )
        traces = [
            json.dumps(
                harness.trace_kernel(
                    kernel,
                    specs,
                    kwargs,
                    KERNEL_FILE,
                    max_events,
                    current=modules.imported_api() == "current",
                ),
                separators=(",", ":"),
            )
            for _ in range(2)
        ]
    except NkiError as exc:
        return _refused(exc)
    except RecursionError as exc:
        return status("compile_error", kernel_frames(exc), "err_recursion")
    except Exception as exc:  # the kernel's own Python error, as the NKI tracer would report it
        return status("compile_error", kernel_frames(exc), "err_python_exception")
    if traces[0] != traces[1]:
        return status(
            "rejected",
            "the kernel emitted a different instruction stream on its second call: kernels "
            "must not keep state across calls or depend on how often they ran",
            "err_nondeterministic_trace",
        )
    return {"status": "ok", "message": "", "code": "", "line": 0}, traces[0]


def status(kind: str, message: str = "", code: str = "", line: int = 0) -> tuple[dict, None]:
    """A result without a trace."""
    return {"status": kind, "message": message, "code": code, "line": line}, None


def _refused(exc: NkiError) -> tuple[dict, None]:
    """What the emulator refused, at the kernel line it names (else the kernel's last line in the
    traceback)."""
    line = exc.line or next(
        (
            f.lineno
            for f in reversed(traceback.extract_tb(exc.__traceback__))
            if f.filename == KERNEL_FILE
        ),
        0,
    )
    return status(
        "rejected" if exc.code in REFUSAL_CODES else "compile_error",
        exc.message,
        exc.code,
        line or 0,
    )


def as_tuples(value):
    """JSON brought the problem's tuple arguments (conv1d's padding) as lists; the kernel gets
    them as the problem defines them (the current API refuses list arguments)."""
    return tuple(as_tuples(v) for v in value) if isinstance(value, list) else value


def main(argv: list[str]) -> int:
    request = json.loads(sys.stdin.buffer.read() if argv[1] == "-" else Path(argv[1]).read_bytes())
    workdir = Path.cwd()
    result, trace = trace_source(
        request["kernel"],
        request["entry"],
        request["inputs"],
        {key: as_tuples(value) for key, value in request["kwargs"].items()},
        request["generation"],
        request["sbuf_bytes"],
        request["max_events"],
    )
    if trace is not None:
        (workdir / "trace.json").write_text(trace)
    (workdir / "status.json").write_text(
        json.dumps(result)
    )  # written after the kernel's code has run
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
