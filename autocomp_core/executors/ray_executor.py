"""The ``ray`` executor: evaluations run on Ray actors, one per evaluation slot
(``EvaluationSlot``, in ``ray_worker``), each holding the resources the backend declares
for one evaluation (``Backend.resources()``: CPUs, memory, GPUs, custom resources such as
``neuron_cores``) on a node that has them. The slots start when the run knows its backend
(``prepare``), before its first evaluation is due; each builds the backend once through
its node's plugin registry and runs the backend's own ``evaluate`` there, sandboxed as on
this machine, one evaluation at a time.

Only evaluations leave this process: LLM calls, budgets and the journal stay here. An
evaluation lost with its slot (its worker process or node died) is run again on another
slot (``max_retries`` times; a new slot replaces the dead one wherever Ray can place it),
then becomes an ``INFRA_ERROR`` result, which the search does not hold against the
program. Each attempt lost is reported (``EvalRequest.on_lost``) with its node, its
number and the reason, for the journal.

Waiting for a node is not an attempt: while no live node can hold a slot (every node
that could has died), evaluations wait, ``stalled`` says so (for the progress display)
and the log says so at once and every ``NO_NODES_REPEAT_S``; when that lasts
``no_nodes_timeout_s`` the evaluations raise ``NoNodes``, which stops the run cleanly
(``RunStopped``): ``resume`` continues it once nodes are back.

Ray is imported only when the executor connects: ``pip install 'autocomp-core[ray]'``.
"""

from __future__ import annotations

import json
import math
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self

import anyio
import structlog
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..contract.backend import EvalResult, FailureKind
from ..errors import ConfigError
from ..ledger.accounting import RunStopped

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from ..contract.backend import Backend
    from ..contract.resources import Resources
    from .contract import EvalRequest

log = structlog.get_logger("autocomp")

#: seconds a node has to answer a short question (``describe``), and to accept a connection
QUESTION_TIMEOUT_S = 60.0
#: tries to open a Ray Client (ray://) session whose server process failed to start
CLIENT_CONNECT_ATTEMPTS = 3
#: beyond its own evaluation limit, how long an evaluation may wait for a slot (one
#: starting: a new worker process, the backend opened on it) and report back before it is
#: taken for lost
TASK_SLACK_S = 300.0
#: how long leaving waits for the slots to close their backends
CLOSE_TIMEOUT_S = 15.0
#: how often an evaluation waiting for a slot asks whether a live node can hold one (the
#: answer is shared for as long by every evaluation waiting)
NODE_CHECK_S = 1.0
#: how long slots may keep failing to start where live nodes could hold them before an
#: evaluation counts it as an attempt lost: a node that has just died is still counted
#: live until it misses its health checks, and slots started there fail meanwhile
NO_SLOT_GRACE_S = 30.0
#: while no live node can hold a slot, the log says so again this often
NO_NODES_REPEAT_S = 30.0
#: the stop reason of a run that waited ``no_nodes_timeout_s`` for a node
NO_NODES_REASON = "executor.no_nodes_timeout_s"


class RayOptions(BaseModel):
    """``[executor]`` keys of ``kind = "ray"``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: ``auto`` (``RAY_ADDRESS``, else the cluster started on this machine), ``HOST:PORT``
    #: (the head node's GCS port, from a machine of the cluster's network) or
    #: ``ray://HOST:PORT`` (the Ray Client port of the head node, from anywhere)
    address: str = "auto"
    #: times an evaluation lost with its worker or node is run again
    max_retries: int = Field(2, ge=0, le=20)
    #: how long evaluations wait while no live node can hold an evaluation slot (every node
    #: that could has died) before the run stops (then ``resume`` it once nodes are back)
    no_nodes_timeout_s: float = Field(600.0, ge=0, le=7 * 24 * 3600)

    @field_validator("address")
    @classmethod
    def _address(cls, value: str) -> str:
        value = value.strip()
        if value != "auto" and split_address(value) is None:
            raise ValueError(f"expected auto, HOST:PORT or ray://HOST:PORT, got {value!r}")
        return value


def split_address(address: str) -> tuple[str, int] | None:
    """(host, port) of ``HOST:PORT`` or ``ray://HOST:PORT``; None when it is neither."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        return None
    return host.strip("[]"), int(port)


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "executor.kind: ray needs Ray: pip install 'autocomp-core[ray]'"
        ) from None
    return ray


def task_needs(resources: Resources) -> dict[str, Any]:
    """A backend's needs as Ray task or actor options (memory in bytes, as Ray counts it)."""
    return {
        "num_cpus": resources.cpus,
        "num_gpus": resources.gpus,
        "memory": int(resources.memory_mb) * 2**20,
        "resources": dict(resources.custom),
    }


def fits(offer: dict[str, float], resources: Resources) -> int:
    """How many evaluations with these needs one node's resources hold at once."""
    needs = {
        "CPU": resources.cpus,
        "GPU": resources.gpus,
        "memory": resources.memory_mb * 2**20,
        **resources.custom,
    }
    return min(
        (
            math.floor(offer.get(name, 0.0) / amount + 1e-9)
            for name, amount in needs.items()
            if amount > 0
        ),
        default=0,
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}".rstrip(": ")


def _cluster_messages_to_log() -> None:
    """Ray prints the cluster's messages to its driver (a node died, a worker crashed) on
    stdout, where the engine's ``--json`` output goes: send them to the log instead."""
    import ray._private.worker as ray_worker

    def log_messages(data: dict[str, Any], ignore_prefix: bool = False) -> None:
        for line in data.get("lines", []):
            log.warning("ray cluster", source=data.get("pid"), message=str(line)[:1000])

    if hasattr(ray_worker, "print_to_stdstream"):
        ray_worker.print_to_stdstream = log_messages


class NoSlot(Exception):
    """Every evaluation slot of a backend configuration failed to start."""


class NoNodes(RunStopped):
    """No live node could hold an evaluation slot for ``no_nodes_timeout_s``: the run
    stops (``detail`` says why in one line) and can be resumed once nodes are back."""

    def __init__(self, detail: str) -> None:
        super().__init__(NO_NODES_REASON, detail)


class SlotPool:
    """The evaluation slots (``EvaluationSlot`` actors) of one backend configuration: kept
    at ``size``, each started at once and handed to one evaluation at a time once it has
    opened its backend; a dead one is replaced wherever Ray can place a new one."""

    def __init__(self, start: Callable[[], Any], size: int, tasks: TaskGroup) -> None:
        self._start = start  # starts one actor (not waiting for it)
        self.size = size
        self._tasks = tasks  # the executor's: where the slots' openings are awaited
        self.idle: list[Any] = []  # opened, not evaluating
        self.busy: list[Any] = []
        self.starting: list[Any] = []
        self.last_error = ""  # why the last slot that died while starting died
        self._where: dict[int, dict[str, Any]] = {}  # an open slot's node, by id(actor)
        self._changed = anyio.Event()
        self._openings: set[anyio.CancelScope] = set()

    def fill(self) -> None:
        """Start slots until ``size`` are open or starting."""
        while len(self.idle) + len(self.busy) + len(self.starting) < self.size:
            actor = self._start()
            self.starting.append(actor)
            self._tasks.start_soon(self._open, actor)

    async def _open(self, actor: Any) -> None:
        from ray.exceptions import RayError

        with anyio.CancelScope() as opening:  # cancelled when the pool closes
            self._openings.add(opening)
            try:
                where = await actor.open.remote()
            except RayError as exc:  # its node died, or it could not be created there
                self.last_error = _first_line(exc)
                self.starting.remove(actor)
                _kill(actor)
            else:
                self.starting.remove(actor)
                self._where[id(actor)] = where
                self.idle.append(actor)
            finally:
                self._openings.discard(opening)
            self._notify()

    async def take(self) -> Any:
        """An open slot, when one is free; ``NoSlot`` when none is left to wait for."""
        self.fill()
        while not self.idle:
            if not self.starting and not self.busy:
                raise NoSlot(f"no evaluation slot could start: {self.last_error}")
            await self._changed.wait()
        actor = self.idle.pop(0)
        self.busy.append(actor)
        return actor

    def where(self, actor: Any) -> dict[str, Any]:
        """The node an open slot is on (``node_id``, ``node_ip``, ``pid``)."""
        return self._where.get(id(actor), {})

    def give_back(self, actor: Any) -> None:
        self.busy.remove(actor)
        self.idle.append(actor)
        self._notify()

    def discard(self, actor: Any) -> None:
        """A slot lost (its process or node died, or it stopped answering): end it and
        start another."""
        self.busy.remove(actor)
        self._where.pop(id(actor), None)
        _kill(actor)
        self.fill()
        self._notify()

    async def close(self) -> None:
        """Close the open slots' backends (for a while), then end every slot."""
        for opening in list(self._openings):
            opening.cancel()
        with anyio.move_on_after(CLOSE_TIMEOUT_S, shield=True):
            for ref in [actor.close.remote() for actor in self.idle]:
                try:
                    await ref
                except Exception:  # one that fails to close must not keep the others open
                    pass
        for actor in self.idle + self.busy + self.starting:
            _kill(actor)
        self.idle, self.busy, self.starting = [], [], []
        self._where.clear()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()


def _kill(actor: Any) -> None:
    import ray

    try:
        ray.kill(actor, no_restart=True)
    except Exception:  # already gone
        pass


class RayExecutor:
    """Evaluations on evaluation slots (Ray actors) of the cluster at ``options.address``."""

    def __init__(self, options: RayOptions, plugins: tuple[str, ...] = ()) -> None:
        self.options = options
        self.plugins = tuple(plugins)  # the run's plugin modules, loaded on the nodes too
        self._connected_here = False
        self._slot_class: Any = None
        self._pools: dict[str, SlotPool] = {}  # by backend configuration
        self._tasks: TaskGroup | None = None  # the slots' openings, while entered
        self._live: tuple[float, list[dict[str, Any]]] | None = None  # (asked at, nodes)
        self._no_nodes_since: float | None = None  # since when no live node can hold a slot
        self._no_nodes_said = 0.0  # when the log last said so

    # -- connection ---------------------------------------------------------------------
    async def __aenter__(self) -> Self:
        ray = import_ray()
        if not ray.is_initialized():
            self._connect(ray)
            self._connected_here = True
        from .ray_worker import EvaluationSlot

        self._slot_class = ray.remote(EvaluationSlot)
        self._tasks = anyio.create_task_group()
        await self._tasks.__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            await pool.close()
        if self._tasks is not None:
            tasks, self._tasks = self._tasks, None
            tasks.cancel_scope.cancel()
            await tasks.__aexit__(None, None, None)
        if self._connected_here:
            import ray

            ray.shutdown()
            self._connected_here = False

    def _connect(self, ray: Any) -> None:
        address = self.options.address
        where = split_address(address)
        if where is not None:  # refuse an address nobody answers at once, not after retries
            try:
                socket.create_connection(where, timeout=10).close()
            except OSError as exc:
                raise ConfigError(
                    f"executor.address: no Ray cluster answers at {address} ({exc.strerror or exc})"
                ) from None
        for attempt in range(CLIENT_CONNECT_ATTEMPTS):
            try:
                ray.init(
                    address=address,
                    namespace="autocomp",
                    log_to_driver=False,
                    logging_level="WARNING",
                )
                break
            except ConnectionAbortedError as exc:
                # ray://: the head's client server could not start this driver's server
                # process in time (a busy head); a new request starts a new one
                if attempt + 1 == CLIENT_CONNECT_ATTEMPTS:
                    why = " ".join(str(exc).split())[:300]
                    raise ConfigError(
                        f"executor.address: the Ray cluster at {address} did "
                        f"not start a client session in {attempt + 1} tries: "
                        f"{why}"
                    ) from None
            except Exception as exc:  # ConnectionError, an auth failure, a version mismatch
                raise ConfigError(
                    f"executor.address: cannot connect to the Ray cluster at "
                    f"{address}: {_first_line(exc)}"
                ) from None
        _cluster_messages_to_log()

    # -- capacity -----------------------------------------------------------------------
    def nodes(self) -> list[dict[str, Any]]:
        import ray

        return [n for n in ray.nodes() if n.get("Alive")]

    def slots(self, resources: Resources) -> int:
        """Evaluations the live nodes hold at once (``resources.parallel`` and
        ``available`` describe one machine and do not apply)."""
        nodes = self.nodes()
        total = sum(fits(n.get("Resources", {}), resources) for n in nodes)
        if total == 0:
            offered = sorted(
                {k for n in nodes for k in n.get("Resources", {}) if not k.startswith("node:")}
            )
            needs = ", ".join(f"{v:g} {k}" for k, v in resources.needs().items() if v)
            raise ValueError(
                f"no node of the Ray cluster can run one evaluation: it needs "
                f"{needs}; the {len(nodes)} nodes offer {', '.join(offered)}"
            )
        return total

    # -- evaluation ---------------------------------------------------------------------
    async def prepare(self, backend: Backend, slots: int) -> None:
        """Start ``slots`` evaluation slots for this backend now, not waiting for them:
        their worker processes start and open the backend while the run gets going."""
        self._pool(backend, slots).fill()

    def _pool(self, backend: Backend, size: int | None = None) -> SlotPool:
        spec = backend_spec(backend, self.plugins)
        key = json.dumps(spec, sort_keys=True)
        if key not in self._pools:
            # Ray's own retries would hide from the journal that the first attempt died
            options = task_needs(backend.resources())
            slot = self._slot_class.options(
                max_concurrency=1, max_restarts=0, max_task_retries=0, **options
            )
            assert self._tasks is not None, "used outside `async with`"
            self._pools[key] = SlotPool(
                lambda: slot.remote(spec), size or self.slots(backend.resources()), self._tasks
            )
        return self._pools[key]

    async def evaluate(self, request: EvalRequest) -> EvalResult:
        from ray.exceptions import RayError, RayTaskError, TaskCancelledError

        pool = self._pool(request.backend)
        resources = request.backend.resources()
        lost: list[dict[str, Any]] = []
        for attempt in range(1, self.options.max_retries + 2):
            slot = ref = None
            try:
                slot = await self._take(pool, resources)
                with anyio.fail_after(request.ctx.timeout_s * 3 + TASK_SLACK_S):
                    ref = slot.evaluate.remote(request.problem, request.code, request.ctx)
                    answer = await ref
            except (RayTaskError, TaskCancelledError) as exc:  # the slot's own code failed
                pool.give_back(slot)
                lost.append(self._loss(attempt, pool.where(slot), _first_line(exc)))
                return self._lost(lost, attempt, retried=False)
            except (RayError, TimeoutError, NoSlot) as exc:  # the slot went away, or none came
                where = pool.where(slot) if slot is not None else {}
                if slot is not None:
                    pool.discard(slot)
                self._live = None  # its node may have died: ask again before the next try
                lost.append(
                    self._loss(
                        attempt, where, _first_line(exc) if str(exc) else "no answer in time"
                    )
                )
                log.warning(
                    "evaluation lost with its worker or node; running it again"
                    if attempt <= self.options.max_retries
                    else "evaluation lost with its worker or node, for the last time",
                    attempt=attempt,
                    node=where.get("node_ip"),
                    error=lost[-1]["reason"],
                )
                if request.on_lost is not None:
                    request.on_lost(lost[-1])
                continue
            except BaseException:  # cancelled here: stop it there (the slot goes on serving)
                if ref is not None:
                    self._cancel(ref)
                if slot is not None:
                    pool.give_back(slot)
                raise
            pool.give_back(slot)
            result = EvalResult.from_dict(answer["result"])
            result.placement = {
                "executor": "ray",
                **answer["where"],
                "attempts": attempt,
                **({"lost": lost} if lost else {}),
            }
            return result
        return self._lost(lost, self.options.max_retries + 1, retried=True)

    @staticmethod
    def _loss(attempt: int, where: dict[str, Any], reason: str) -> dict[str, Any]:
        """One attempt lost: its number, the node it was on (when a slot was taken) and why."""
        return {
            "attempt": attempt,
            "node_id": where.get("node_id"),
            "node_ip": where.get("node_ip"),
            "reason": reason,
        }

    # -- waiting for a node -------------------------------------------------------------
    async def _take(self, pool: SlotPool, resources: Resources) -> Any:
        """An open slot of ``pool`` on a live node. While no live node can hold one, wait
        for a node without counting it as an attempt (``NoNodes`` once that has lasted
        ``no_nodes_timeout_s``). Where nodes can hold one: slots that keep failing to
        start for ``NO_SLOT_GRACE_S`` are ``NoSlot``, and none opening within
        ``TASK_SLACK_S`` a ``TimeoutError`` (attempts lost)."""
        waiting_since: float | None = None  # for a slot to start, where nodes can hold one
        while True:
            failed: NoSlot | None = None
            slot = None
            try:
                with anyio.move_on_after(NODE_CHECK_S):
                    slot = await pool.take()
            except NoSlot as exc:
                failed = exc
            if slot is not None:
                try:
                    live = {n["NodeID"] for n in await self.live_nodes()}
                except BaseException:  # cancelled: the slot goes on serving
                    pool.give_back(slot)
                    raise
                if pool.where(slot).get("node_id") in live:
                    self.note_nodes_back()
                    return slot
                pool.discard(slot)  # an idle slot whose node died: not an attempt lost
                continue
            if await self.live_slots(resources) == 0:
                waiting_since = None
                self.note_no_nodes(resources)
            elif failed is not None or not pool.busy:  # not waiting for others to finish
                self.note_nodes_back()
                now = time.monotonic()
                waiting_since = waiting_since or now
                if failed is not None and now - waiting_since >= NO_SLOT_GRACE_S:
                    raise failed
                if now - waiting_since >= TASK_SLACK_S:
                    raise TimeoutError(f"no evaluation slot opened in {TASK_SLACK_S:.0f} s")
            if failed is not None:  # slots that cannot start: start others in a while
                await anyio.sleep(NODE_CHECK_S)

    async def live_nodes(self) -> list[dict[str, Any]]:
        """The live nodes, asked of the cluster (in a thread: the event loop goes on) at
        most once per ``NODE_CHECK_S``, every evaluation waiting sharing the answer; a
        cluster that does not answer has none."""
        now = time.monotonic()
        if self._live is None or now - self._live[0] >= NODE_CHECK_S:
            try:
                nodes = await anyio.to_thread.run_sync(self.nodes)
            except Exception as exc:
                log.warning("the Ray cluster does not answer", error=_first_line(exc))
                nodes = []
            self._live = (time.monotonic(), nodes)
        return self._live[1]

    async def live_slots(self, resources: Resources) -> int:
        """Evaluations with these needs the live nodes hold at once."""
        return sum(fits(n.get("Resources", {}), resources) for n in await self.live_nodes())

    def note_no_nodes(self, resources: Resources) -> None:
        """An evaluation found no live node able to hold a slot: say so (at once, then
        every ``NO_NODES_REPEAT_S``); ``NoNodes`` once ``no_nodes_timeout_s`` has passed."""
        now = time.monotonic()
        limit = self.options.no_nodes_timeout_s
        if self._no_nodes_since is None:
            self._no_nodes_since = self._no_nodes_said = now
            needs = ", ".join(f"{v:g} {k}" for k, v in resources.needs().items() if v)
            log.warning(
                "no live node of the Ray cluster can hold an evaluation slot; waiting for one",
                needs=needs,
                stops_after_s=limit,
            )
        waited = now - self._no_nodes_since
        if waited >= limit:
            raise NoNodes(
                f"no live node of the Ray cluster could hold an evaluation slot for "
                f"{waited:.0f} s (executor.no_nodes_timeout_s = {limit:g})"
            )
        if now - self._no_nodes_said >= NO_NODES_REPEAT_S:
            self._no_nodes_said = now
            log.warning(
                "still no live node of the Ray cluster can hold an evaluation slot",
                waited_s=round(waited),
                stops_after_s=limit,
            )

    def note_nodes_back(self) -> None:
        """A live node can hold a slot (again): the wait, if there was one, is over."""
        if self._no_nodes_since is not None:
            waited = time.monotonic() - self._no_nodes_since
            self._no_nodes_since = None
            log.warning(
                "a node of the Ray cluster can hold evaluation slots again", waited_s=round(waited)
            )

    def stalled(self) -> str | None:
        """Why evaluations cannot run now, with how long they have waited; None while
        they can."""
        if self._no_nodes_since is None:
            return None
        waited = time.monotonic() - self._no_nodes_since
        return (
            f"no live node can hold an evaluation slot: waiting {waited:.0f} s "
            f"(the run stops at {self.options.no_nodes_timeout_s:g} s)"
        )

    @staticmethod
    def _cancel(ref: Any, force: bool = False) -> None:
        import ray

        try:
            ray.cancel(ref, force=force)
        except Exception:  # already finished, or its worker is gone
            pass

    @staticmethod
    def _lost(lost: list[dict[str, Any]], attempts: int, retried: bool) -> EvalResult:
        why = "; ".join(
            f"attempt {x['attempt']}"
            + (f" on {x['node_ip']}" if x["node_ip"] else "")
            + f": {x['reason']}"
            for x in lost[-3:]
        )
        text = (
            f"the evaluation was lost with its worker or node on every attempt ({attempts}): {why}"
            if retried
            else f"the evaluation task failed on its node: {why}"
        )
        return EvalResult(
            False,
            failure=FailureKind.INFRA_ERROR,
            feedback=text,
            placement={"executor": "ray", "attempts": attempts, "lost": lost},
        )

    # -- description --------------------------------------------------------------------
    async def describe(self) -> dict[str, Any]:
        """The live nodes: address, resources, and the backends each has installed."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from .ray_worker import installed_backends

        probe = ray.remote(installed_backends)
        rows = []
        for node in self.nodes():
            ref = probe.options(
                num_cpus=0,
                max_retries=0,
                scheduling_strategy=(NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)),
            ).remote(list(self.plugins))
            try:
                with anyio.fail_after(QUESTION_TIMEOUT_S):
                    backends = await ref
            except Exception as exc:  # a node that cannot answer is shown as such
                self._cancel(ref, force=True)
                backends = {"error": _first_line(exc)}
            rows.append(
                {
                    "node_id": node["NodeID"],
                    "address": node.get("NodeManagerAddress"),
                    "resources": {
                        k: v
                        for k, v in node.get("Resources", {}).items()
                        if not k.startswith("node:")
                    },
                    "backends": backends,
                }
            )
        return {"kind": "ray", "address": self.options.address, "nodes": rows}


def backend_spec(backend: Backend, plugins: tuple[str, ...]) -> dict[str, Any]:
    """What a node needs to build the same backend: its name, hardware config and options
    (as JSON data) and the run's extra plugin modules."""
    return {
        "name": backend.name,
        "hardware": backend.hardware.model_dump(mode="json"),
        "options": backend.options.model_dump(mode="json"),
        "plugins": list(plugins),
    }
