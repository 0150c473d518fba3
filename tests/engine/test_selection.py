"""Beam selection rules, early stop and the exhaustive trigger, on hand-built lineages."""

from autocomp_core.engine.selection import exhaustive_now, lineage, select_beam, should_early_stop
from autocomp_core.ledger.store import Candidate

INF = float("inf")


def make(cid, score, parents=("root",), plan="p", origin="plan"):
    return Candidate(
        id=cid, iteration=1, parents=list(parents), origin=origin, plan=plan, code=cid, score=score
    )


def world(*cands):
    root = Candidate(id="root", iteration=0, parents=[], origin="root", code="r", score=100.0)
    table = {c.id: c for c in (root, *cands)}
    return root, table.get


def test_elitist_and_sorted_by_score():
    a, b, c = make("a", 50), make("b", 40, plan="q"), make("c", 70, plan="r")
    root, look = world(a, b, c)
    beam = select_beam([root], [a, b, c], beam_size=3, keep_factor=1.0, lookup=look, dedup_level=-1)
    assert [x.id for x in beam] == ["b", "a", "c"]


def test_children_that_do_not_beat_parent_are_gated_by_keep_factor():
    a = make("a", 105)  # 5% slower than the root
    root, look = world(a)
    assert [
        x.id
        for x in select_beam([root], [a], beam_size=4, keep_factor=1.0, lookup=look, dedup_level=-1)
    ] == ["root"]
    assert [
        x.id
        for x in select_beam([root], [a], beam_size=4, keep_factor=1.1, lookup=look, dedup_level=-1)
    ] == ["root", "a"]


def test_failed_children_never_enter():
    a = make("a", INF)
    root, look = world(a)
    assert [
        x.id
        for x in select_beam([root], [a], beam_size=4, keep_factor=2, lookup=look, dedup_level=-1)
    ] == ["root"]


def test_dedup_level_0_keeps_best_code_per_plan():
    a1, a2, b = make("a1", 50, plan="tile"), make("a2", 40, plan="tile"), make("b", 60, plan="u")
    root, look = world(a1, a2, b)
    beam = select_beam([root], [a1, a2, b], beam_size=4, keep_factor=1, lookup=look, dedup_level=0)
    assert [x.id for x in beam] == ["a2", "b", "root"]


def test_dedup_level_1_one_per_non_root_parent():
    p = make("p", 50)
    c1, c2 = make("c1", 30, parents=["p"], plan="x"), make("c2", 20, parents=["p"], plan="y")
    root, look = world(p, c1, c2)
    beam = select_beam([p], [c1, c2], beam_size=4, keep_factor=1, lookup=look, dedup_level=1)
    assert [x.id for x in beam] == ["c2", "p"]
    # children of the root are exempt from level 1
    beam = select_beam(
        [root],
        [make("d1", 30, plan="x"), make("d2", 20, plan="y")],
        beam_size=4,
        keep_factor=1,
        lookup=look,
        dedup_level=1,
    )
    assert len(beam) == 3


def test_dedup_level_2_no_shared_ancestor():
    p, q = make("p", 50), make("q", 60, plan="other")
    c = make("c", 30, parents=["p"], plan="x")
    _, look = world(p, q, c)
    beam = select_beam([p, q], [c], beam_size=4, keep_factor=1, lookup=look, dedup_level=2)
    assert [x.id for x in beam] == ["c", "q"]  # c displaces its parent p
    assert lineage(c, look) == {"c", "p"}


def test_combined_child_must_beat_every_parent():
    p, q = make("p", 50), make("q", 60, plan="o")
    x = make("x", 55, parents=["p", "q"], plan="combine", origin="combine")
    y = make("y", 45, parents=["p", "q"], plan="combine2", origin="combine")
    _, look = world(p, q, x, y)
    beam = select_beam([p, q], [x, y], beam_size=4, keep_factor=1.5, lookup=look, dedup_level=-1)
    assert [b.id for b in beam] == ["y", "p", "q"]


def test_translation_ranking_prefers_completeness_and_skips_gate():
    a, b = make("a", 500, plan="t1"), make("b", 900, plan="t2")
    a.translation_score, b.translation_score = 5, 9
    root, look = world(a, b)
    beam = select_beam(
        [root],
        [a, b],
        beam_size=2,
        keep_factor=1,
        lookup=look,
        dedup_level=0,
        rank_by_translation=True,
    )
    assert [x.id for x in beam] == ["b", "a"]


def test_selection_independent_of_completion_order():
    cands = [make(f"c{k}", 40, plan=f"p{k}") for k in range(5)]
    root, look = world(*cands)
    one = select_beam([root], cands, beam_size=3, keep_factor=1, lookup=look, dedup_level=0)
    two = select_beam([root], cands[::-1], beam_size=3, keep_factor=1, lookup=look, dedup_level=0)
    assert [c.id for c in one] == [c.id for c in two] == ["c0", "c1", "c2"]


def test_early_stop():
    losses = [100, 90, 90, 90]
    assert not should_early_stop(losses, 4, 0, 1.0, 0)
    assert should_early_stop(losses, 4, 2, 1.0, 0)
    assert not should_early_stop([100, 90, 80, 70], 4, 2, 1.0, 0)
    assert not should_early_stop(losses, 4, 2, 1.0, translation_iterations=2)


def test_exhaustive_trigger():
    assert exhaustive_now(
        [100], 1, first_iterations=1, stagnation_iterations=0, stagnation_ratio=1.0
    )
    assert not exhaustive_now([100, 90], 2, 1, 0, 1.0)
    assert exhaustive_now([100, 90, 90], 3, 0, 1, 1.0)
    assert not exhaustive_now([100, 90, 80], 3, 0, 1, 1.0)
