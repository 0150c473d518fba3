"""The run's candidates and their ancestry, as the search reads them.

Candidates made in this session are kept as they are saved; those of earlier sessions (a
resumed run) are read from the journal on first use, with the feedback of their
evaluation, which prompts show. ``import_beam`` brings another run's final beam and its
ancestry into this run (``search.continue_from``).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import RunError
from ..ledger.store import Candidate, RunStore


class Lineage:
    def __init__(self, store: RunStore) -> None:
        self.store = store
        self._known: dict[str, Candidate] = {}

    def get(self, cid: str) -> Candidate | None:
        if cid not in self._known:
            c = self.store.candidate(cid)
            if c is None:
                return None
            if c.eval_key:
                c.feedback = (self.store.evaluation(c.eval_key) or {}).get("feedback", "")
            self._known[cid] = c
        return self._known[cid]

    def require(self, cid: str) -> Candidate:
        """A candidate the journal must hold (a member of a saved beam)."""
        c = self.get(cid)
        if c is None:
            raise RunError(f"the run's journal lacks candidate {cid} of a saved beam")
        return c

    def save(self, c: Candidate) -> None:
        self._known[c.id] = c
        self.store.save_candidate(c)

    def chain(self, c: Candidate) -> list[Candidate]:
        """Root-to-candidate ancestry along first parents."""
        out = [c]
        while out[-1].parents:
            parent = self.get(out[-1].parents[0])
            if parent is None:
                break
            out.append(parent)
        return out[::-1]

    def import_beam(self, run_dir: str | Path) -> list[Candidate]:
        """Another run's final beam, with every ancestor, saved into this run under new ids
        (``prev-<id>``, at iteration 0) so they cannot collide with this run's."""
        if not RunStore.exists(run_dir):
            raise RunError(f"search.continue_from: no run found in {run_dir}")
        other = RunStore(run_dir, readonly=True)
        try:
            last = other.last_iteration()
            ids = other.beam(last) if last is not None else None
            if not ids:
                raise RunError(f"search.continue_from: {run_dir} has no finished beam")
            copied: dict[str, Candidate] = {}
            todo = list(ids)
            while todo:
                cid = todo.pop()
                c = other.candidate(cid) if cid not in copied else None
                if c is not None:
                    copied[cid] = c
                    todo.extend(c.parents)
        finally:
            other.close()
        for c in copied.values():
            c.id, c.parents, c.iteration = f"prev-{c.id}", [f"prev-{p}" for p in c.parents], 0
            self.save(c)
        return [self._known[f"prev-{cid}"] for cid in ids]
