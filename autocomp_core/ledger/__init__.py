"""What a run spends and what it did: budgets and the ledger (``accounting``), and the SQLite
store of a run's candidates, calls and evaluations (``store``)."""
