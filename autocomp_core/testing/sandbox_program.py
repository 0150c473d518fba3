"""``python -m autocomp_core.testing.sandbox_program CODE [ARG...]`` runs CODE as
``python -c CODE [ARG...]`` would: a program given as text, but started as a module, so a
``sandbox.PreloadServer`` can serve it (``tests/test_sandbox_preload.py`` uses it)."""

import sys

if __name__ == "__main__":
    code = sys.argv[1]
    sys.argv = ["-c", *sys.argv[2:]]
    exec(compile(code, "<string>", "exec"), {"__name__": "__main__"})
