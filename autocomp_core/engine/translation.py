"""The translation phase (``[translation]``): a run's first iterations may move a program
onto the target's own kernels and instructions before optimizing it.

One value holds it for the whole run, shared by the search, its prompts, the exports, the
report and the CLI, so every part reads the same rules: which iterations translate (the
search ends the phase early once a judge finds the whole beam translated) and whether the
untranslated original may still be the run's result.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config import TranslationConfig


@dataclass
class Translation:
    config: TranslationConfig
    iterations: int  # the iterations that translate: the configured number, or fewer

    @classmethod
    def of(cls, config: TranslationConfig) -> Translation:
        return cls(config, config.iterations)

    def active(self, iteration: int) -> bool:
        """Whether ``iteration`` translates (uses the translation menu)."""
        return iteration <= self.iterations

    @property
    def drop_root(self) -> bool:
        """Whether the original program is no result once a translated one is correct: the
        same rule for the beam, ``best<ext>``, ``summary.json`` and the report."""
        return self.config.iterations > 0 and self.config.drop_original

    def drops_root_at(self, iteration: int) -> bool:
        """Whether the original leaves the beam at ``iteration``: the last that translates."""
        return self.drop_root and iteration == self.iterations

    def complete(self, iteration: int, beam_scores: list[float | None]) -> bool:
        """Whether translation ends early at ``iteration``: a judge scored every program of
        the new beam at least ``complete_threshold``."""
        return (
            iteration < self.iterations
            and bool(beam_scores)
            and all((s or 0) >= self.config.complete_threshold for s in beam_scores)
        )
