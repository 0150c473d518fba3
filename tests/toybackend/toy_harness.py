"""Evaluation harness of the toy backend. Runs inside the sandbox next to ``candidate.py``.

Usage: ``python toy_harness.py PROBLEM SEED`` with a nonce on stdin. It imports the
candidate, checks ``solution`` against the reference on seeded inputs, then counts the
Python line and call events executed inside the candidate file during a fixed workload.
It prints one line ``<nonce> <json>``; the nonce is read before the candidate is imported,
so the candidate cannot print a result line of its own by accident or on purpose.
"""

import json
import os
import random
import sys
import traceback
from collections import Counter
from pathlib import Path

CANDIDATE = str(Path("candidate.py").resolve())


def reference(problem, xs):
    if problem == "sum_squares" or shape_sibling(problem):
        return sum(x * x for x in xs)
    if problem == "prefix_max":
        out, best = [], None
        for x in xs:
            best = x if best is None or x > best else best
            out.append(best)
        return out
    if problem == "count_pairs":
        counts = Counter(xs)
        zeros = counts.pop(0, 0)
        return zeros * (zeros - 1) // 2 + sum(counts[x] * counts[-x] for x in counts if x > 0)
    if problem == "count_negatives":
        return sum(1 for x in xs if x < 0)
    raise SystemExit(f"unknown problem {problem!r}")


EDGE_CASES = [[], [0], [7], [-3], [-3, 3], [0, 0, 0], [5, -5, 5, -5], [-1, -2, -3], [50, -50, 49]]
#: Sizes of the fixed inputs the metric is measured on (same for every candidate).
WORKLOAD_SIZES = {
    "sum_squares": (100, 100, 100),
    "prefix_max": (60, 60, 60),
    "count_pairs": (60, 60, 60),
    "count_negatives": (100, 100, 100),
}


def shape_sibling(problem):
    """The list length of a ``sum_squares-<N>`` sibling (its workload's lists), else None."""
    family, _, size = problem.partition("-")
    return int(size) if family == "sum_squares" and size.isdigit() else None


def random_lists(seed, sizes):
    rng = random.Random(seed)
    return [[rng.randint(-50, 50) for _ in range(n)] for n in sizes]


def check_inputs(seed):
    """Edge cases, then fresh random inputs that depend on the evaluation seed."""
    return EDGE_CASES + random_lists(seed * 1000 + 17, (10, 31, 64))


def workload(problem):
    size = shape_sibling(problem)
    return random_lists(4242, (size,) * 3 if size else WORKLOAD_SIZES[problem])


def short(value, limit=200):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def same(got, expected):
    if isinstance(expected, list):
        return isinstance(got, (list, tuple)) and list(got) == expected
    return type(got) is not bool and got == expected


class Counting:
    """A ``sys.settrace`` tracer counting events in frames of the candidate file."""

    def __init__(self):
        self.calls = 0
        self.lines = Counter()

    def global_trace(self, frame, event, arg):
        if frame.f_code.co_filename != CANDIDATE:
            return None
        self.calls += 1
        return self.local_trace

    def local_trace(self, frame, event, arg):
        if event == "line":
            self.lines[frame.f_lineno] += 1
        return self.local_trace


def main():
    problem, seed = sys.argv[1], int(sys.argv[2])
    nonce = sys.stdin.readline().strip()
    # The report goes to the real stdout; whatever the candidate prints goes to stderr,
    # so a chatty candidate cannot push the report past the output cap.
    results = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)

    def report(status, **fields):
        print(f"\n{nonce} {json.dumps({'status': status, **fields})}", file=results, flush=True)

    source = Path(CANDIDATE).read_text()
    try:
        code = compile(source, CANDIDATE, "exec")
    except SyntaxError:
        return report("compile_error", feedback=traceback.format_exc(limit=0))
    namespace = {"__name__": "candidate", "__file__": CANDIDATE}
    try:
        exec(code, namespace)
    except Exception:
        return report(
            "crash", feedback="importing the candidate failed:\n" + traceback.format_exc()
        )
    solution = namespace.get("solution")
    if not callable(solution):
        return report("compile_error", feedback="the program defines no function `solution(xs)`")
    if getattr(getattr(solution, "__code__", None), "co_filename", None) != CANDIDATE:
        return report(
            "rejected", feedback="`solution` must be a Python function defined in the program"
        )

    for index, xs in enumerate(check_inputs(seed)):
        expected = reference(problem, xs)
        try:
            got = solution(list(xs))
        except Exception:
            return report(
                "crash",
                feedback=f"solution raised on input #{index} {short(xs)}:\n"
                + traceback.format_exc(),
            )
        if not same(got, expected):
            return report(
                "wrong_answer",
                feedback=f"input #{index} {short(xs)}: expected "
                f"{short(expected)}, got {short(got)}",
            )

    tracer = Counting()
    inputs = workload(problem)
    sys.settrace(tracer.global_trace)
    try:
        for xs in inputs:
            solution(list(xs))
    except Exception:
        sys.settrace(None)
        return report(
            "crash",
            feedback="solution raised during the timed workload:\n" + traceback.format_exc(),
        )
    hijacked = sys.gettrace() != tracer.global_trace
    sys.settrace(None)
    if hijacked:
        return report("rejected", feedback="the program changed the trace function")
    lines = source.splitlines()
    hot = [
        [n, count, lines[n - 1].strip() if 0 < n <= len(lines) else ""]
        for n, count in tracer.lines.most_common(3)
    ]
    report("ok", lines=sum(tracer.lines.values()), calls=tracer.calls, runs=len(inputs), hot=hot)


if __name__ == "__main__":
    main()
