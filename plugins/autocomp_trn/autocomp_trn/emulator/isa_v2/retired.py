"""The names the current ``nki.isa`` removed or moved: each call fails in one line naming the
NKI version and the replacement."""

from __future__ import annotations

from ..indexing import NkiError


def _retired(name: str, message: str, code: str):
    def call(*_args, **_kw):
        raise NkiError(f"nisa.{name} {message}", code)

    call.__name__ = name
    return call


_RETIRED = {
    "tensor_copy_dynamic_src": (
        "was removed in NKI 0.4: use nisa.tensor_copy or nisa.dma_copy on a dynamic access pattern",
        "err_removed_api",
    ),
    "tensor_copy_dynamic_dst": (
        "was removed in NKI 0.4: use nisa.tensor_copy or nisa.dma_copy on a dynamic access pattern",
        "err_removed_api",
    ),
    "register_alloc": (
        "is deprecated since NKI 0.8: use nisa.scalar_load / nisa.scalar_store (NkiScalar)",
        "err_deprecated_api",
    ),
    "register_load": (
        "is deprecated since NKI 0.8: use nisa.scalar_load (NkiScalar)",
        "err_deprecated_api",
    ),
    "register_store": (
        "is deprecated since NKI 0.8: use nisa.scalar_store (NkiScalar)",
        "err_deprecated_api",
    ),
    "register_move": (
        "is deprecated since NKI 0.8: use NkiScalar arithmetic",
        "err_deprecated_api",
    ),
    "sendrecv": ("moved to nki.lnc in NKI 0.8", "err_deprecated_api"),
    "sendrecv_compute": ("moved to nki.lnc in NKI 0.8", "err_deprecated_api"),
    "core_barrier": ("moved to nki.lnc in NKI 0.8", "err_deprecated_api"),
}
#: name -> the function a kernel finds under it
FUNCTIONS = {name: _retired(name, message, code) for name, (message, code) in _RETIRED.items()}
