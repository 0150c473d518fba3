"""``nki.compiler`` (current API): the per-kernel ``CompileConfig`` a kernel passes to
``@nki.jit(compile_config=...)``.

The config chooses who allocates memory (``Allocation.COLORING``: neuronx-cc, the default;
``Allocation.LINEAR``: NKI itself) and who orders instructions (``scheduling=True``: NKI), plus
optimizations that act only in some of those modes. ``CompileConfig(...)`` refuses what the
documentation's configuration-error table refuses, at decoration time, with the same wording.
``recorded()`` is what the tracing process writes into the trace as ``trace["compile_config"]``:
only the options the kernel set, enums as lower-case strings. ``validate_recorded`` checks such a
dict again from scratch (the trusted side must never take the candidate's word for it).
"""

from __future__ import annotations

import enum

from .indexing import NkiError


class Allocation(enum.Enum):
    """Who allocates the kernel's tensors: NKI (``LINEAR``) or neuronx-cc (``COLORING``)."""

    LINEAR = "linear"
    COLORING = "coloring"


class OptLevel(enum.Enum):
    """How many optimizations the NKI flow turns on (O1 is the default)."""

    O0 = "o0"
    O1 = "o1"
    O2 = "o2"


class AddressRotation(enum.Enum):
    """Whether the backend may rotate a buffer's address (``AUTO`` is the default)."""

    AUTO = "auto"
    ENABLE = "enable"
    DISABLE = "disable"


#: the options that take an enum, and which one
ENUM_OPTIONS: dict[str, type[enum.Enum]] = {
    "allocation": Allocation,
    "opt_level": OptLevel,
    "address_rotation": AddressRotation,
}
#: the options that take a bool
BOOL_OPTIONS = (
    "scheduling",
    "prefetch_auto",
    "split_reused_buffers",
    "tensor_copy_elim",
    "dma_copy_elim",
    "element_widening",
    "engine_balancing",
    "nki_alloc_fallback",
    "barrier_check",
    "dead_code_elim",
    "non_ssa_legalization",
)
#: options that act only when NKI allocates (allocation=Allocation.LINEAR)
NEEDS_NKI_ALLOCATION = (
    "opt_level",
    "prefetch_auto",
    "split_reused_buffers",
    "tensor_copy_elim",
    "dma_copy_elim",
    "element_widening",
    "nki_alloc_fallback",
)
#: options that act only when NKI schedules (scheduling=True)
NEEDS_NKI_SCHEDULING = ("engine_balancing",)
#: documented options this emulator does not accept (their effect is not modelled)
NOT_EMULATED = (
    "register_load_reuse",
    "remove_unused_instructions",
    "remove_overwritten_writes",
    "sbuf_allocation_fallback",
    "allocation_mode",
    "scheduling_heuristic",
)
OPTIONS = (*ENUM_OPTIONS, *BOOL_OPTIONS)


class CompileConfigError(NkiError, ValueError):
    """A CompileConfig the documentation says is refused before compilation."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "err_compile_config")


def _check_types(options: dict) -> None:
    for name, value in options.items():
        if name in NOT_EMULATED:
            raise CompileConfigError(
                f"CompileConfig option {name} is documented but this emulator does not model "
                "it; remove it"
            )
        if name not in OPTIONS:
            raise CompileConfigError(f"CompileConfig got an unexpected option {name!r}")
        kind = ENUM_OPTIONS.get(name)
        if kind is not None and not isinstance(value, kind):
            raise CompileConfigError(
                f"TypeError: {name} must be an nki.compiler.{kind.__name__}, got {value!r} "
                f"(pass a member such as {kind.__name__}.{next(iter(kind)).name}, not a string "
                "or an integer)"
            )
        if kind is None and not isinstance(value, bool):
            raise CompileConfigError(f"TypeError: {name} must be True or False, got {value!r}")


def _check_modes(options: dict) -> None:
    """The combinations the documentation refuses: scheduling needs NKI allocation, and each
    allocation- or scheduling-only option needs its mode."""
    linear = options.get("allocation") is Allocation.LINEAR
    if options.get("scheduling") and not linear:
        got = options.get("allocation")
        raise CompileConfigError(
            "ValueError: scheduling=True needs an allocation; set allocation=Allocation.LINEAR "
            "as well"
            if got is None
            else f"ValueError: scheduling=True needs allocation=Allocation.LINEAR, got "
            f"allocation=Allocation.{got.name}"
        )
    for name in NEEDS_NKI_ALLOCATION:
        if name in options and not linear:
            raise CompileConfigError(
                f"ValueError: {name} acts only when NKI allocates; it cannot be set without "
                "allocation=Allocation.LINEAR"
            )
    for name in NEEDS_NKI_SCHEDULING:
        if name in options and not options.get("scheduling"):
            raise CompileConfigError(
                f"ValueError: {name} acts only when NKI schedules; set scheduling=True as well"
            )


class CompileConfig:
    """``nki.compiler.CompileConfig(**options)``: validated when it is built."""

    __slots__ = ("_options",)

    def __init__(self, **options) -> None:
        options = {k: v for k, v in options.items() if v is not None}  # None: the default
        _check_types(options)
        _check_modes(options)
        object.__setattr__(self, "_options", dict(options))

    def __getattr__(self, name: str):
        if name in OPTIONS:
            return self._options.get(name)
        raise AttributeError(name)

    def __setattr__(self, name, value):
        raise NkiError("a CompileConfig is immutable: build a new one", "err_compile_config")

    def recorded(self) -> dict:
        """The options the kernel set, as the trace records them (enums as lower-case names)."""
        return {
            name: value.value if isinstance(value, enum.Enum) else value
            for name, value in sorted(self._options.items())
        }

    def __repr__(self) -> str:
        return f"CompileConfig({self.recorded()})"


def validate_recorded(recorded) -> dict:
    """A ``trace["compile_config"]`` dict checked from scratch: the keys, the value types and
    the combinations. Returns the options as enums and bools; raises ``CompileConfigError``."""
    if not isinstance(recorded, dict):
        raise CompileConfigError("compile_config must be a JSON object")
    options = {}
    for name, value in recorded.items():
        kind = ENUM_OPTIONS.get(name)
        if kind is not None:
            try:
                value = kind(value)
            except ValueError:
                raise CompileConfigError(
                    f"compile_config {name}={value!r} is not one of {[m.value for m in kind]}"
                ) from None
        options[name] = value
    _check_types(options)
    _check_modes(options)
    return options


PUBLIC = ("CompileConfig", "Allocation", "OptLevel", "AddressRotation")
