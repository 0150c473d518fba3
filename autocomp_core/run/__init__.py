"""One run, set up, resumed or replayed (``runner``), and the files it leaves (``exports``)."""
