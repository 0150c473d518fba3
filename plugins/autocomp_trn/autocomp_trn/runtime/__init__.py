"""The processes an evaluation runs (tracing, replay, the PyTorch baseline, Neuron), and what
both the tracing process and the engine's static screen need: the modules a kernel may import
(kept here, so that the screen loads none of the emulator)."""

#: the top-level modules a kernel may import
ALLOWED_IMPORTS = frozenset(
    {
        "nki",
        "neuronxcc",
        "numpy",
        "math",
        "functools",
        "itertools",
        "operator",
        "typing",
        "dataclasses",
        "enum",
        "collections",
        "__future__",
    }
)
