"""The search: the beam search itself (``search``), the journal that makes it resumable and
replayable (``journal``), and the parts it asks: prompts, context, menus, answers, selection,
lineage, the stage gate (``schedule``), translation, and the progress display it updates."""
