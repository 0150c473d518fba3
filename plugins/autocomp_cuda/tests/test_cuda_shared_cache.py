"""One cache shared by several processes (parallel runs, a test suite's workers): a reference
or a build that two of them need at once is made by one, and the other finds it."""

from __future__ import annotations

import asyncio

import pytest

from autocomp_cuda.harness.children import Children
from autocomp_cuda.workers import ReferenceServer

# The build step runs for any program that names an extension builder; this one builds
# nothing (cpp_extension is only named here), so the step costs one child, not a compile.
NO_EXTENSION = (
    "# cpp_extension\nimport torch.nn as nn\n\n"
    "class ModelNew(nn.Module):\n    def forward(self, x):\n        return x.relu()\n"
)


@pytest.mark.asyncio
async def test_two_harnesses_on_one_cache_make_each_reference_and_build_once(
    make_backend, tmp_path, monkeypatch
):
    children: list[str] = []
    run_child = Children.run

    async def counted(self, module, job, work, wall_s):
        children.append(module)
        return await run_child(self, module, job, work, wall_s)

    serve = ReferenceServer.run

    async def served(self, job, wall_s):
        children.append("reference_main")
        return await serve(self, job, wall_s)

    monkeypatch.setattr(Children, "run", counted)
    monkeypatch.setattr(ReferenceServer, "run", served)
    # two backends, each with its own harness and in-process locks, as two processes have
    first, second = (make_backend("cpu", cache_dir=str(tmp_path)) for _ in range(2))
    spec = first.spec("L1/relu")
    refs = await asyncio.gather(first.harness.reference(spec, 7), second.harness.reference(spec, 7))
    assert children.count("reference_main") == 1, children
    assert refs[0][0] == refs[1][0]
    builds = await asyncio.gather(
        first.harness.build(NO_EXTENSION), second.harness.build(NO_EXTENSION)
    )
    assert [failure for _, failure, _, _ in builds] == [None, None], builds
    assert children.count("candidate_main") == 1, children
    assert sorted(hit for _, _, hit, _ in builds) == [False, True]
