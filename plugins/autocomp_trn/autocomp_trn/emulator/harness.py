"""Calling a kernel under the tracer: inputs become opaque HBM handles, the result is a trace."""

from __future__ import annotations

import inspect

from .indexing import NkiError
from .modules import Kernel
from .tracer import CURRENT, HBM, MAX_EVENTS, Tile, Tracer


def trace_kernel(
    func,
    input_specs: list[tuple[str, tuple[int, ...], str]],
    kwargs: dict,
    filename: str = "",
    max_events: int = MAX_EVENTS,
    current: bool = False,
) -> dict:
    """Run ``func`` once on handles named/shaped/typed by ``input_specs``; return its trace.
    ``current``: the kernel speaks the current API (NKI 0.8), whose verification rules apply."""
    if current:
        _no_list_arguments(func, kwargs)
    tr = Tracer(filename, max_events, current)
    CURRENT.append(tr)
    try:
        inputs = []
        for name, shape, dtype in input_specs:
            t = tr.new_tensor(shape, dtype, HBM, None, name, line=0)
            t.is_input = True
            inputs.append(t.full())
        result = func(*inputs, **kwargs)
    finally:
        CURRENT.remove(tr)
    outs = list(result) if isinstance(result, (tuple, list)) else [result]
    for out in outs:
        if isinstance(out, Tile) and out.tensor.tracer is not tr:
            raise NkiError(
                "the kernel returned a tensor created by an earlier call: kernels must not keep "
                "state across calls",
                "err_state_across_calls",
            )
        if not isinstance(out, Tile):
            raise NkiError(
                "the kernel must return the HBM tensor(s) it created in this call "
                f"(got {type(out).__name__})",
                "err_wrong_outputs",
            )
        if out.buffer != HBM or not out.is_whole():
            raise NkiError(
                "the kernel must return whole HBM tensors (nl.ndarray(..., buffer=nl.shared_hbm))",
                "err_wrong_outputs",
            )
        if current and out.tensor.hbm_kind != "shared":
            raise NkiError(
                "verification error (NKI 0.3): kernel outputs must be allocated in "
                f"nl.shared_hbm, not {out.tensor.hbm_kind or 'an input'} HBM",
                "err_output_not_shared_hbm",
            )
    trace = tr.to_json([o.tensor.tid for o in outs], [i.tensor.tid for i in inputs])
    config = getattr(func, "compile_config", None)
    if isinstance(func, Kernel) and config is not None:
        trace["compile_config"] = config.recorded()
    return trace


def _no_list_arguments(func, kwargs: dict) -> None:
    """NKI 0.3: a kernel argument, given or defaulted, is never a list."""
    arguments = dict(kwargs)
    try:
        signature = inspect.signature(getattr(func, "func", func))
    except (TypeError, ValueError):
        signature = None
    if signature is not None:
        for name, parameter in signature.parameters.items():
            if name not in arguments and parameter.default is not inspect.Parameter.empty:
                arguments[name] = parameter.default
    for name, value in arguments.items():
        if isinstance(value, list):
            raise NkiError(
                f"verification error (NKI 0.3): kernel argument {name} is a list; pass a tuple",
                "err_list_argument",
            )
