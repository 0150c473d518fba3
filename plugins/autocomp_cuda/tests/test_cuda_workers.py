"""Workers started ahead of need: warm, still one process per candidate, never left behind."""

from __future__ import annotations

import asyncio
import fcntl
import os
from pathlib import Path

import pytest
from autocomp_core import make_backend as make_configured_backend
from autocomp_core.errors import ConfigError
from autocomp_core.sandbox import SandboxLimits
from autocomp_core.sandbox.workdirs import SUFFIX

from autocomp_cuda.workers import Worker

HEAD = "import torch\nimport torch.nn as nn\n\n"
# Leaves a mark in the environment of whatever process imports it.
MARKER = HEAD + (
    "import os\nos.environ['AUTOCOMP_LEAKED_MARK'] = '1'\n"
    "class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
)
# Correct only in a process the previous candidate never touched.
SEES_MARKER = HEAD + (
    "import os\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
    "        scale = 2.0 if os.environ.get('AUTOCOMP_LEAKED_MARK') else 1.0\n"
    "        return torch.relu(x) * scale\n"
)


@pytest.mark.asyncio
async def test_next_candidate_finds_a_warm_worker_but_not_the_previous_candidate(make_backend):
    backend = make_backend("cpu")
    harness, spec = backend.harness, backend.spec("L1/relu")
    try:
        first = await harness.evaluate(spec, MARKER)
        assert first.status == "ok", first.message
        assert await harness.warm_up()
        second = await harness.evaluate(spec, SEES_MARKER)
        assert second.worker_warm is True
        assert second.status == "ok", second.message  # a reused process would double the output
    finally:
        await harness.aclose()


# Correct only in a worker forked from the preload server, which imported the worker's
# module by name (a fresh interpreter runs it as __main__ only).
FORKED_ONLY = HEAD + (
    "import sys\nFORKED = 'autocomp_cuda.runtime.candidate_main' in sys.modules\n"
    "class ModelNew(nn.Module):\n    def forward(self, x):\n"
    "        return torch.relu(x) * (1.0 if FORKED else 2.0)\n"
)


@pytest.mark.asyncio
async def test_candidate_workers_are_forked_from_a_process_that_imported_torch(make_backend):
    """Still one fresh process per candidate (the test above), now without its own import of
    torch; ``preload_workers = false`` gives each a fresh interpreter again."""
    forked = await make_backend("cpu", static_checks=False).harness.evaluate(
        make_backend("cpu").spec("L1/relu"), FORKED_ONLY
    )
    assert forked.status == "ok", forked.message
    fresh = make_backend("cpu", static_checks=False, preload_workers=False)
    verdict = await fresh.harness.evaluate(fresh.spec("L1/relu"), FORKED_ONLY)
    assert verdict.status == "mismatch", verdict.message


@pytest.mark.asyncio
async def test_without_warm_workers_nothing_waits_in_standby(make_backend):
    backend = make_backend("cpu", warm_workers=False)
    harness, spec = backend.harness, backend.spec("L1/relu")
    verdict = await harness.evaluate(spec, MARKER)
    assert verdict.status == "ok" and verdict.worker_warm is False
    assert harness.children.standby == {}


def is_held(path: Path) -> bool:
    """Whether some process holds the work dir (and a killed engine's sweep would skip it)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


@pytest.mark.asyncio
async def test_standby_workers_end_with_the_harness_and_leave_no_files(make_backend):
    harness = make_backend("cpu").harness
    assert await harness.warm_up()
    workers = list(harness.children.standby.values())
    for worker in workers:  # held while alive: swept only if the engine dies
        assert worker.work.name.endswith(SUFFIX) and is_held(worker.work)
    await harness.aclose()
    for worker in workers:
        assert worker.task.done()
        assert not worker.work.exists()


@pytest.mark.asyncio
async def test_a_standby_worker_cancelled_before_it_started_leaves_no_files():
    # What an event loop that ends right after starting a standby worker does to it.
    worker = Worker({}, SandboxLimits(wall_s=30), idle_s=60)
    worker.task.cancel()
    await asyncio.gather(worker.task, return_exceptions=True)
    await asyncio.sleep(0)  # let the done callbacks run
    assert not worker.work.exists()


@pytest.mark.asyncio
async def test_an_unused_standby_worker_leaves_on_its_own(make_backend):
    harness = make_backend("cpu", standby_idle_s=4.0).harness
    assert await harness.warm_up()
    (worker,) = harness.children.standby.values()
    await asyncio.wait_for(asyncio.shield(worker.task), 30)
    assert not worker.work.exists()
    await harness.aclose()


@pytest.mark.asyncio
async def test_a_worker_that_disarms_its_watchdog_is_killed_at_the_deadline(make_backend):
    # It sleeps rather than spins: the deadline is the point, and a spinning process would
    # take a core from the rest of the suite for the whole 18 s.
    hang = HEAD + (
        "import faulthandler\nimport time\n"
        "class ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        faulthandler.cancel_dump_traceback_later()\n"
        "        while True:\n            time.sleep(1)\n"
    )
    backend = make_backend(
        "cpu",
        static_checks=False,
        load_timeout_s=6,
        correctness_timeout_s=2,
        timing_timeout_s=2,
        worker_slack_s=2,
    )
    harness = backend.harness
    try:
        verdict = await harness.evaluate(backend.spec("L1/relu"), hang)
        assert verdict.status == "timeout", verdict.message
        assert "correctness phase" in verdict.message
    finally:
        await harness.aclose()


@pytest.mark.asyncio
async def test_a_watchdog_timeout_is_a_timeout_even_after_a_stderr_flood(make_backend):
    # More stderr than the sandbox keeps (2 MB, the head of it), then a hang: the watchdog's
    # line is no longer in what the engine reads of stderr.
    flood = HEAD + (
        "import sys\n"
        "class ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        sys.stderr.write('noise ' * 600_000)\n        sys.stderr.flush()\n"
        "        while True:\n            pass\n"
    )
    backend = make_backend("cpu", correctness_timeout_s=3)
    harness = backend.harness
    try:
        verdict = await harness.evaluate(backend.spec("L1/relu"), flood)
    finally:
        await harness.aclose()
    assert verdict.status == "timeout", (verdict.status, verdict.message)
    assert "correctness phase" in verdict.message and "Timeout (" in verdict.detail


def test_static_rules_refuse_disarming_the_watchdog():
    from autocomp_cuda import static_check

    findings = static_check.check(HEAD + "import faulthandler\n")
    assert findings and "watchdog" in findings[0].message


@pytest.mark.parametrize(
    "options, message",
    [
        ({"trails": 3}, "backend_options.trails: unknown key (known: "),
        ({"trials": "many"}, "backend_options.trials: Input should be a valid integer"),
        (
            {"warm_workers": "maybe"},
            "backend_options.warm_workers: Input should be a valid boolean",
        ),
        ({"size": "huge"}, "backend_options.size: Input should be 'tiny' or 'full'"),
        (
            {"compile_workers": 0},
            "backend_options.compile_workers: Input should be greater than or equal to 1",
        ),
    ],
)
def test_bad_backend_options_are_one_line_config_errors(options, message):
    with pytest.raises(ConfigError) as err:
        make_configured_backend("cuda", {"device": "cpu"}, options)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_workers_find_the_packages_where_the_engine_found_them(make_backend):
    # A checkout used without installing (PYTHONPATH, AUTOCOMP_PLUGINS) must work too: the
    # workers' interpreters get the engine's import roots, not only its site-packages.
    import os
    import subprocess
    import sys

    path = make_backend("cpu").harness.children.env(None)["PYTHONPATH"]
    probe = (
        "import importlib.util, autocomp_cuda.runtime; "
        "assert importlib.util.find_spec('autocomp_core') is not None"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", probe],
        capture_output=True,
        text=True,
        env={"PATH": os.environ["PATH"], "PYTHONPATH": path},
    )  # -S: no site-packages at all
    assert done.returncode == 0, done.stderr


def test_on_gpus_candidates_compile_while_others_time(make_backend):
    # No GPU is needed to ask: the engine runs this many evaluations at once; the harness
    # still times one candidate at a time per GPU (its device-slot queue).
    backend = make_backend("cpu")
    gpus = type(backend)(
        hardware={"device": "cuda", "gpus": [0, 1]}, options={"compile_workers": 3}
    )
    assert gpus.resources().parallel == 5 and gpus.harness.device_slots == 2
    assert backend.resources().parallel == 1


def _problem(forward: str, prelude: str = "") -> str:
    return (
        HEAD + prelude + "\nclass Model(nn.Module):\n    def forward(self, x):\n"
        f"        {forward}\n\n"
        "def get_inputs():\n    return [torch.randn(8, 16)]\n\n"
        "def get_init_inputs():\n    return []\n"
    )


# Leaves behind what a problem's code can change in its process: the default dtype and a mark
# in builtins (nothing puts that back).
LEAKS = _problem(
    "return torch.tanh(x)",
    "import builtins\nbuiltins.autocomp_leaked_mark = True\ntorch.set_default_dtype(torch.float64)\n",
)
# Its output is float32 only where the default dtype is (get_inputs draws with it).
PLAIN = _problem("return torch.tanh(x) * 2.0")
# Fails in a process the first problem ran in: a verdict that depends on an earlier problem.
SEES_THE_MARK = _problem(
    "return torch.sigmoid(x)",
    "import builtins\nassert not getattr(builtins, 'autocomp_leaked_mark', False), 'leaked'\n",
)
CRASHES = _problem("import os; os._exit(3)")
HANGS = _problem("import time; time.sleep(600)")


@pytest.mark.asyncio
async def test_the_gate_keeps_its_reference_worker_yet_each_problem_runs_as_in_a_fresh_one(
    make_backend, tmp_path
):
    # Its own cache: every reference below must really run.
    backend = make_backend("cpu", cache_dir=str(tmp_path / "cache"), correctness_timeout_s=6)
    names = ["leaks", "plain", "sees_the_mark", "crashes", "after_crash", "hangs", "after_hang"]
    sources = [LEAKS, PLAIN, SEES_THE_MARK, CRASHES, PLAIN, HANGS, PLAIN]
    reports = {}
    try:
        for name, source in zip(names, sources):
            (tmp_path / f"{name}.py").write_text(source)
            reports[name] = await backend.check_problem(str(tmp_path / f"{name}.py"))
            if name == "plain":  # served by the same process as "leaks"
                assert [s.served for s in backend.harness.references.servers] == [2]
    finally:
        await backend.aclose()
    verdicts = {name: (r.category, r.reasons) for name, r in reports.items()}
    assert reports["leaks"].passed and reports["leaks"].details["output"]["dtype"] == "float64"
    assert reports["plain"].passed and reports["plain"].details["output"]["dtype"] == "float32"
    # Failed on the kept worker, then passed on a fresh one: the verdict is the fresh one's.
    assert reports["sees_the_mark"].passed, verdicts
    assert reports["crashes"].category == "reference_error", verdicts
    assert "died" in reports["crashes"].reasons[0], verdicts
    assert reports["hangs"].category == "reference_too_slow", verdicts
    assert reports["after_crash"].passed and reports["after_hang"].passed, verdicts


@pytest.mark.asyncio
async def test_a_sandbox_that_cannot_be_made_says_why(make_backend, monkeypatch, tmp_path):
    # (an isolation level this machine cannot give: the sandbox's own one-line reason, where
    # the verdict said only that the reference worker "crashed" or the baseline "overran")
    monkeypatch.setenv("AUTOCOMP_SANDBOX_ISOLATION", "no-such-level")
    backend = make_backend("cpu", cache_dir=str(tmp_path))
    harness = backend.harness
    try:
        with pytest.raises(RuntimeError, match="AUTOCOMP_SANDBOX_ISOLATION='no-such-level'"):
            await harness.evaluate(backend.spec("L1/relu"), MARKER)
    finally:
        await harness.aclose()
