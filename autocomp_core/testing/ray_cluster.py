"""A real, small Ray cluster on 127.0.0.1 for tests and benchmarks of the ``ray`` executor.

A head node and worker nodes, each a ``ray start --block`` process in a process group of
its own. Every process a node starts (Ray's worker processes leave the group) inherits a
marker naming the cluster and the node in its environment, so a node can be killed whole
(``kill_node``), as a machine dies, and ``stop`` ends every process the cluster started,
so nothing outlives it even when a test fails. The cluster uses token authentication with a token of its own;
``driver_env`` is what a process that connects to it needs.

Nodes inherit this process's environment (``PYTHONPATH``, ``AUTOCOMP_PLUGINS``): that is
how Ray workers import the engine and the plugins, as on a real cluster where both are
installed on every node.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MARKER = "AUTOCOMP_TEST_RAY_CLUSTER"
#: a node counts as dead after this many missed health checks of this period: a killed
#: node's evaluations are retried within seconds, not the default tens of seconds
HEALTH = {
    "RAY_health_check_period_ms": "500",
    "RAY_health_check_failure_threshold": "4",
    "RAY_health_check_initial_delay_ms": "0",
}
READY = "Ray runtime started"
STARTUP_TIMED_OUT = "timed out during startup"
#: Ray replaces 127.0.0.1 (and localhost) by the machine's routable address; other loopback
#: addresses it leaves alone. The nodes take 127.A.B.2, 127.A.B.3, ... so that every
#: connection of the cluster stays on the loopback range; A.B is drawn per cluster, so two
#: clusters at once (tests in parallel) never bind the same address and port.
FIRST_NODE_IP = 2


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass
class Node:
    name: str
    process: subprocess.Popen
    log: Path


class LocalRayCluster:
    """``with LocalRayCluster() as cluster:``; then ``add_node`` as many as a test needs."""

    def __init__(
        self,
        head_cpus: float = 1,
        head_resources: dict[str, float] | None = None,
        object_store_mb: int = 80,
        memory_mb: int = 4096,
        env: dict[str, str] | None = None,
    ) -> None:
        self.head_cpus = head_cpus
        self.head_resources = head_resources or {}
        self.object_store_mb = object_store_mb
        self.memory_mb = memory_mb
        # short: Ray's unix sockets live under it and their paths are limited to 107 bytes
        self.root = Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp"))
        self.marker = self.root.name
        self.token = secrets.token_hex(24)
        self.subnet = f"127.{1 + secrets.randbelow(254)}.{secrets.randbelow(256)}"
        self.port = free_port(self.ip(0))
        self.client_port = free_port(self.ip(0))
        self.env = {
            **os.environ,
            **(env or {}),
            **HEALTH,
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": self.token,
            "RAY_USAGE_STATS_ENABLED": "0",
        }
        self.nodes: dict[str, Node] = {}
        self.added = 0  # worker nodes started so far (each takes the next loopback address)

    def ip(self, node: int) -> str:
        """The loopback address of the head (0) and of the n-th worker node."""
        return f"{self.subnet}.{FIRST_NODE_IP + node}"

    @property
    def address(self) -> str:
        return f"{self.ip(0)}:{self.port}"

    @property
    def client_address(self) -> str:
        return f"ray://{self.ip(0)}:{self.client_port}"

    def driver_env(self) -> dict[str, str]:
        """What a driver (an engine connecting to the cluster) needs in its environment."""
        return {
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": self.token,
            "RAY_USAGE_STATS_ENABLED": "0",
        }

    # -- nodes --------------------------------------------------------------------------
    def __enter__(self) -> LocalRayCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, timeout_s: float = 180) -> None:
        self._start(
            "head",
            [
                "--head",
                f"--port={self.port}",
                f"--temp-dir={self.root / 'ray'}",
                "--include-dashboard=false",
                f"--dashboard-port={free_port(self.ip(0))}",
                f"--ray-client-server-port={self.client_port}",
            ],
            self.ip(0),
            self.head_cpus,
            self.head_resources,
            {},
            timeout_s,
        )

    def add_node(
        self,
        name: str,
        num_cpus: float = 1,
        resources: dict[str, float] | None = None,
        env: dict[str, str] | None = None,
        timeout_s: float = 180,
    ) -> Node:
        self.added += 1
        return self._start(
            name,
            [f"--address={self.address}"],
            self.ip(self.added),
            num_cpus,
            resources or {},
            env or {},
            timeout_s,
        )

    def _start(
        self,
        name: str,
        args: list[str],
        ip: str,
        num_cpus: float,
        resources: dict[str, float],
        env: dict[str, str],
        timeout_s: float,
    ) -> Node:
        log = self.root / f"{name}.log"
        command = [
            sys.executable,
            "-m",
            "ray.scripts.scripts",
            "start",
            "--block",
            f"--node-ip-address={ip}",
            f"--num-cpus={num_cpus:g}",
            "--num-gpus=0",
            f"--memory={self.memory_mb * 2**20}",
            f"--object-store-memory={self.object_store_mb * 2**20}",
            f"--resources={json.dumps(resources)}",
            "--disable-usage-stats",
            "--include-log-monitor=false",
            f"--dashboard-agent-listen-port={free_port(ip)}",
            f"--dashboard-agent-grpc-port={free_port(ip)}",
            f"--runtime-env-agent-port={free_port(ip)}",
            f"--metrics-export-port={free_port(ip)}",
            *args,
        ]
        deadline = time.monotonic() + timeout_s
        while True:
            with open(log, "wb") as out:
                process = subprocess.Popen(
                    command,
                    env={**self.env, **env, MARKER: f"{self.marker}/{name}"},
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            node = self.nodes[name] = Node(name, process, log)
            while READY not in (text := log.read_text(errors="replace")):
                if process.poll() is not None or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            else:
                return node
            # Ray gives a node's raylet a fixed 30 s to register, which a loaded machine
            # can miss: start the node again while there is time, else fail with its log
            self.kill_node(name)
            if STARTUP_TIMED_OUT not in text or time.monotonic() > deadline:
                raise RuntimeError(f"ray node {name} did not start:\n{text[-3000:]}")

    def kill_node(self, name: str) -> None:
        """Kill a node's every process at once, as a machine that dies."""
        node = self.nodes.pop(name)
        _kill_group(node.process.pid, signal.SIGKILL)
        _kill_all(self.processes(name))
        node.process.wait()

    def kill_raylet(self, name: str) -> int:
        """``kill -9`` of a node's raylet, as a user kills a node: its workers die with it
        and the cluster marks the node dead after its missed health checks. The pid killed."""
        for pid in self.processes(name):
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if Path(argv[0].decode(errors="replace")).name == "raylet":
                os.kill(pid, signal.SIGKILL)
                return pid
        raise RuntimeError(f"ray node {name} has no raylet")

    # -- the end ------------------------------------------------------------------------
    def processes(self, node: str | None = None) -> list[int]:
        """Every live process this cluster (or one node of it) started: they carry its
        marker."""
        needle = f"{MARKER}={self.marker}/{node or ''}".encode()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                environ = (entry / "environ").read_bytes()
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z" and any(
                var.startswith(needle) if node is None else var == needle
                for var in environ.split(b"\0")
            ):
                found.append(int(entry.name))
        return found

    def stop(self, grace_s: float = 2) -> None:
        """Stop every node, then every process left with the marker. Each node is asked to
        stop at once and given ``grace_s`` to do so before it is killed: a head asked
        alone can take half a minute to shut down, which a test cluster has no use for."""
        nodes = sorted(self.nodes.values(), key=lambda n: n.name == "head")  # workers first
        self.nodes.clear()
        for node in nodes:
            _kill_group(node.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for node in nodes:
            try:
                node.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            _kill_group(node.process.pid, signal.SIGKILL)
            node.process.wait()
        deadline = time.monotonic() + 15
        while (left := self.processes()) and time.monotonic() < deadline:
            _kill_all(left)
            time.sleep(0.2)
        shutil.rmtree(self.root, ignore_errors=True)

    def status(self) -> dict[str, Any]:
        return {"address": self.address, "nodes": sorted(self.nodes), "root": str(self.root)}


def _kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass
