"""Generated optimization menus (``search.menu_strategy``): an LLM proposes strategies for
each parent and iteration, beyond the pack's menu.

"generated" uses them instead of the pack's menu (the pack's when nothing usable came
back); "mixed" adds them to it. A menu is made once per (iteration, parent), however many
prompts use it, and kept in the run's metadata, so a resumed run uses the same menu.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio

from ..config import SearchConfig
from ..ledger.store import RunStore
from ..llm.types import LLMResponse
from .menus import merge_near_duplicates, parse_items

#: sends the request for one menu, named by its key ("i<iteration>-<parent>")
Ask = Callable[[str], Awaitable[LLMResponse]]


class GeneratedMenus:
    def __init__(self, config: SearchConfig, pack_menu: list[str], store: RunStore) -> None:
        self.strategy = config.menu_strategy
        self.size = config.generated_menu_size
        self.pack_menu = pack_menu
        self.store = store
        self._made: dict[str, list[str]] = {}
        self._locks: dict[str, anyio.Lock] = {}

    async def menu(self, iteration: int, parent: str, ask: Ask) -> list[str] | None:
        """The menu for this parent's prompts in ``iteration``; None: the pack's own."""
        if self.strategy == "static":
            return None
        key = f"i{iteration}-{parent}"
        async with self._locks.setdefault(key, anyio.Lock()):
            if key not in self._made:
                recorded = self.store.get_meta(f"generated_menu/{key}")  # a resumed run
                self._made[key] = (
                    recorded
                    if recorded is not None
                    else await self._generate(iteration, parent, key, ask)
                )
        new = self._made[key]
        if self.strategy == "mixed":
            return [*self.pack_menu, *new]
        return new or None  # nothing usable was generated: the pack's menu

    async def _generate(self, iteration: int, parent: str, key: str, ask: Ask) -> list[str]:
        resp = await ask(key)
        proposed = parse_items(resp.text) if resp.ok else []
        items, repeats = merge_near_duplicates(proposed, existing=self.pack_menu)
        items = items[: self.size]
        self.store.set_meta(f"generated_menu/{key}", items)
        self.store.event(
            "generated_menu",
            iteration=iteration,
            parent=parent,
            items=items,
            repeats=[r for r, _ in repeats],
            ok=resp.ok,
        )
        return items
