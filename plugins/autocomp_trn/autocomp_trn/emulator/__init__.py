"""The NumPy NKI emulator: a tracer for kernel calls, the trusted replay and its cost model."""

#: an evaluation refuses traces longer than this (a runaway or hostile kernel)
MAX_EVENTS = 3_000_000
