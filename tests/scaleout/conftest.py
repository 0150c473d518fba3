"""A real Ray cluster on 127.0.0.1 for the scale-out tests: a head node and a second node
with a resource of its own, started once for the module and stopped after it, with every
process Ray started (checked). The LLM is the engine tests' scripted server."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ENGINE_TESTS = Path(__file__).parent.parent / "engine"
sys.path.insert(0, str(ENGINE_TESTS))

from scripted_llm import reply  # noqa: E402

from autocomp_core.testing.llm_server import LLMTestServer  # noqa: E402
from autocomp_core.testing.ray_cluster import LocalRayCluster  # noqa: E402

#: the second node: one CPU, and resources the head does not have
NODE_B = {"lane": 1.0, "node_b": 1.0}


@pytest.fixture(scope="module")
def cluster():
    env = {
        "AUTOCOMP_TEST_NODE": "head",
        "PYTHONPATH": os.pathsep.join([str(ENGINE_TESTS), os.environ.get("PYTHONPATH", "")]),
    }
    ray_cluster = LocalRayCluster(head_cpus=1, env=env)
    with ray_cluster:
        ray_cluster.add_node("b", num_cpus=1, resources=NODE_B, env={"AUTOCOMP_TEST_NODE": "b"})
        yield ray_cluster
    assert ray_cluster.processes() == [], "Ray processes outlived the cluster"


@pytest.fixture(scope="module")
def llm():
    server = LLMTestServer(lambda req: reply(req.prompt)).start_in_thread()
    yield server
    server.stop_thread()
