"""``nki.lnc`` (current API, NKI 0.8): communication between the two physical NeuronCores that
share an HBM stack. The emulator runs one NeuronCore at LNC degree 1 with no partner core, so
``core_barrier`` checks its arguments and has nothing to wait for (it records no instruction),
and ``sendrecv`` / ``sendrecv_compute``, which need LNC degree 2, are refused."""

from __future__ import annotations

from ..indexing import NkiError
from ..tracer import HBM, Tile


def core_barrier(data, cores, engine=None, name=None) -> None:
    """Wait for the paired core's writes to ``data`` (shared HBM): nothing to wait for here."""
    if not isinstance(data, Tile) or data.buffer != HBM:
        raise NkiError("nki.lnc.core_barrier: data must be a tensor in shared HBM")
    if tuple(cores) != (0, 1):
        raise NkiError(
            f"nki.lnc.core_barrier supports cores=(0, 1) only, got {cores!r}", "err_unsupported_api"
        )


def _needs_lnc2(name: str):
    def refuse(*args, **kwargs):
        raise NkiError(
            f"nki.lnc.{name} exchanges data with the other core of a Logical NeuronCore and needs "
            "LNC degree 2; this emulator runs one NeuronCore (LNC degree 1)",
            "err_unsupported_api",
        )

    refuse.__name__ = name
    return refuse


sendrecv = _needs_lnc2("sendrecv")
sendrecv_compute = _needs_lnc2("sendrecv_compute")

PUBLIC = ("core_barrier", "sendrecv", "sendrecv_compute")
