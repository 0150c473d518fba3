"""Beam selection and the iteration-level decisions that depend on score history.

Pure functions over candidates, so every rule is unit-tested on its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..config import SearchConfig
from ..ledger.store import Candidate, Origin
from .translation import Translation

INF = float("inf")


def lineage(c: Candidate, lookup: Callable[[str], Candidate | None]) -> set[str]:
    """The candidate and all its ancestors, minus the root program."""
    seen: set[str] = set()
    todo = [c.id]
    while todo:
        cid = todo.pop()
        node = lookup(cid)
        if node is None or cid in seen or node.origin == "root":
            continue
        seen.add(cid)
        todo.extend(node.parents)
    return seen


def select_beam(
    incumbents: list[Candidate],
    children: list[Candidate],
    *,
    beam_size: int,
    keep_factor: float,
    lookup: Callable[[str], Candidate | None],
    dedup_level: int,
    rank_by_translation: bool = False,
) -> list[Candidate]:
    """The next beam: the best correct programs, elitist, with the upstream gates.

    - A child enters only if it beats each parent times ``keep_factor`` (a combined
      child must beat every parent outright); incumbents are exempt, and so is
      everything while ranking by translation score.
    - ``dedup_level``: -1 none; 0 one per (parent, plan); 1 one per parent unless that
      parent is the root; 2 no two members share a non-root ancestor.
    Children are ordered by (score, id) so selection never depends on completion order.
    """
    ordered = [*incumbents, *sorted(children, key=lambda c: (c.score, c.id))]
    pool = [c for c in ordered if c.correct]
    if rank_by_translation:
        pool.sort(key=lambda c: (-(c.translation_score or 0.0), c.score))
    else:
        pool.sort(key=lambda c: c.score)  # stable: incumbents win ties
    exempt = {c.id for c in incumbents}  # exempt from the parent gate, not from de-duplication
    kept: list[Candidate] = []
    kept_lineages: list[set[str]] = []
    for c in pool:
        if len(kept) >= beam_size:
            break
        if c.id not in exempt and c.parents and not rank_by_translation:
            parents = [p for p in (lookup(pid) for pid in c.parents) if p is not None]
            factor = 1.0 if len(parents) > 1 else keep_factor
            if any(c.score >= p.score * factor for p in parents):
                continue
        line = lineage(c, lookup)
        if c.parents and _duplicate(c, line, kept, kept_lineages, dedup_level, lookup):
            continue
        kept.append(c)
        kept_lineages.append(line)
    return kept


def next_beam(
    iteration: int,
    beam: list[Candidate],
    children: list[Candidate],
    *,
    search: SearchConfig,
    translation: Translation,
    lookup: Callable[[str], Candidate | None],
    event: Callable[..., Any],
) -> list[Candidate]:
    """The beam after ``iteration``, from the incumbents and the iteration's children: ranked
    by a judge's translation score while translating (which may end the phase early), without
    the original program once the last translating iteration has a correct translation, and
    the incumbents when nothing new is correct. ``event`` records what the run should know."""
    rank_by_translation = translation.active(iteration) and translation.config.score
    if translation.active(iteration):
        keep_factor = translation.config.regression_allowance
    elif iteration <= search.keep_factor_iterations:
        keep_factor = search.keep_factor
    else:
        keep_factor = 1.0

    def best_of(incumbents: list[Candidate], kids: list[Candidate]) -> list[Candidate]:
        return select_beam(
            incumbents,
            kids,
            beam_size=search.beam_size,
            keep_factor=keep_factor,
            lookup=lookup,
            dedup_level=search.prevent_duplicate_level,
            rank_by_translation=rank_by_translation,
        )

    new_beam = best_of(beam, children)
    scores = [c.translation_score for c in new_beam]
    if rank_by_translation and translation.complete(iteration, scores):
        event("translation_complete", iteration=iteration)
        translation.iterations = iteration
    if translation.drops_root_at(iteration):
        translated = best_of(
            [c for c in beam if c.origin != Origin.ROOT],
            [c for c in children if c.origin != Origin.ROOT],
        )
        if translated:
            new_beam = translated
        elif any(c.origin != Origin.ROOT for c in (*beam, *children)):
            event(
                "drop_original_skipped",
                iteration=iteration,
                reason="no translated program is correct",
            )
    return new_beam or beam  # nothing correct: keep the incumbents


def _duplicate(
    c: Candidate,
    line: set[str],
    kept: list[Candidate],
    kept_lineages: list[set[str]],
    level: int,
    lookup: Callable[[str], Candidate | None],
) -> bool:
    if level < 0:
        return False
    for other, other_line in zip(kept, kept_lineages):
        same_parents = other.parents == c.parents
        if level == 0 and same_parents and other.plan == c.plan:
            return True
        if level >= 1 and same_parents:
            parents = [lookup(p) for p in c.parents]
            if not all(p is not None and p.origin == "root" for p in parents):
                return True
        if level >= 2 and line & other_line:
            return True
    return False


def ratio_over(losses: list[float], window: int) -> float | None:
    """best(now) / best(window iterations ago), or None when not enough history."""
    if window <= 0 or len(losses) < window + 1:
        return None
    old, new = losses[-1 - window], losses[-1]
    if old == 0 or old == INF:
        return None
    return new / old


def should_early_stop(
    losses: list[float], iteration: int, window: int, threshold: float, translation_iterations: int
) -> bool:
    """Upstream rule: stop when the best score has not improved enough over ``window``."""
    if window <= 0 or iteration <= translation_iterations + window:
        return False
    ratio = ratio_over(losses, window)
    return ratio is not None and ratio >= threshold


def exhaustive_now(
    losses: list[float],
    iteration: int,
    first_iterations: int,
    stagnation_iterations: int,
    stagnation_ratio: float,
) -> bool:
    """Plan once per menu item: in the first iterations, or when the search stagnates."""
    if iteration <= first_iterations:
        return True
    ratio = ratio_over(losses, stagnation_iterations)
    return ratio is not None and ratio >= stagnation_ratio
