"""The plugin's imports run one way: no module is imported back by what it imports, the NKI
emulator's candidate side is layered (nki.language on nki.isa on the recording of calls on the
tracer), and the trusted replay loads nothing of the candidate side."""

from __future__ import annotations

import grimp

GRAPH = grimp.build_graph("autocomp_trn", cache_dir=None)
EMULATOR = "autocomp_trn.emulator"
#: the candidate side of the emulator, top to bottom: what a kernel calls, and what records it
CANDIDATE_SIDE = ("modules", "language", "isa_v2", "isa", "recording", "tracer")


def test_no_module_of_the_plugin_is_imported_back_by_what_it_imports():
    """Module by module, function-local and typing imports included."""
    circles = sorted(
        f"{module} -> {imported}"
        for module in GRAPH.modules
        for imported in GRAPH.find_modules_directly_imported_by(module)
        if GRAPH.chain_exists(importer=imported, imported=module)
    )
    assert not circles


def test_the_candidate_side_of_the_emulator_imports_only_downwards():
    illegal = GRAPH.find_illegal_dependencies_for_layers(
        layers=CANDIDATE_SIDE, containers={EMULATOR}
    )
    assert not illegal, sorted(f"{d.importer} -> {d.imported}" for d in illegal)


def test_the_trusted_replay_loads_nothing_of_the_candidate_side():
    reached = [
        name
        for name in CANDIDATE_SIDE
        if GRAPH.chain_exists(
            importer=f"{EMULATOR}.replay", imported=f"{EMULATOR}.{name}", as_packages=True
        )
    ]
    assert not reached
