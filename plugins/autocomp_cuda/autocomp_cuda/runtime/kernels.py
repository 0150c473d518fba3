"""Custom-kernel accounting in the candidate's worker: calls into the candidate's own compiled
extensions and Triton kernels are counted (a timed call in which none ran is refused), and
in eval mode the extensions the build step produced are loaded instead of compiled again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torch.utils import cpp_extension


class KernelCounter:
    """Counts calls into the candidate's own compiled extensions and Triton kernels."""

    def __init__(self, prebuilt: str = "") -> None:
        self.prebuilt = prebuilt  # where the build step left this candidate's extensions
        self.calls = 0
        self.extensions: list[str] = []
        self.triton = False

    def wrap_extension(self, module: Any) -> Any:
        counter = self

        class Counted:
            def __init__(self, inner: Any) -> None:
                object.__setattr__(self, "_inner", inner)

            def __getattr__(self, name: str) -> Any:
                value = getattr(object.__getattribute__(self, "_inner"), name)
                if callable(value) and not isinstance(value, type):

                    def call(*args: Any, **kwargs: Any) -> Any:
                        counter.calls += 1
                        return value(*args, **kwargs)

                    return call
                return value

        self.extensions.append(getattr(module, "__name__", "extension"))
        return Counted(module) if module is not None else module

    def install(self, source: str, building: bool, cpu_device: bool) -> None:
        """Count extension calls; in eval mode load the extensions the build step produced."""
        prebuilt = self.prebuilt
        self.built: dict[str, str] = {}
        for fname in ("load_inline", "load"):
            original = getattr(cpp_extension, fname)

            def patched(
                name: str, *args: Any, __original=original, __fname=fname, **kwargs: Any
            ) -> Any:
                if cpu_device and builds_cuda(__fname, args, kwargs):
                    raise RuntimeError(
                        f"extension {name!r} has CUDA sources, which the cpu device can neither build "
                        "nor run: use C++ (cpp_sources only) or Triton here, or run with "
                        'hardware.device = "cuda"'
                    )
                so = Path(prebuilt) / f"{name}.so" if prebuilt else None
                if so is not None and so.exists() and kwargs.get("is_python_module", True):
                    module = cpp_extension._import_module_from_library(name, prebuilt, True)
                else:
                    if building:
                        kwargs["verbose"] = True  # the compiler's commands and output reach the log
                        if (
                            builds_cuda(__fname, args, kwargs)
                            and len(args) <= CUDA_CFLAGS_POSITION[__fname]
                        ):
                            # registers, spills and shared memory per kernel, for the feedback
                            kwargs["extra_cuda_cflags"] = [
                                *(kwargs.get("extra_cuda_cflags") or []),
                                "-Xptxas=-v",
                            ]
                    module = __original(name, *args, **kwargs)
                    root = Path(
                        kwargs.get("build_directory")
                        or cpp_extension._get_build_directory(name, False)
                    )
                    built = root / f"{name}.so"
                    if built.exists():
                        self.built[name] = str(built)
                return self.wrap_extension(module)

            setattr(cpp_extension, fname, patched)
        if "triton" in source:
            self._install_triton()

    def _install_triton(self) -> None:
        try:
            import triton.runtime.jit as jit
        except Exception:
            return
        classes = [jit.JITFunction]
        try:
            from triton.runtime.interpreter import InterpretedFunction

            classes.append(InterpretedFunction)
        except Exception:
            pass
        for cls in classes:
            original = cls.run

            def run(this: Any, *args: Any, __original=original, **kwargs: Any) -> Any:
                self.calls += 1
                self.triton = True
                return __original(this, *args, **kwargs)

            cls.run = run

    @property
    def has_custom_code(self) -> bool:
        return bool(self.extensions) or self.triton


#: Index of ``extra_cuda_cflags`` among the positional arguments after ``name``.
CUDA_CFLAGS_POSITION = {"load_inline": 5, "load": 2}


def inductor_binaries(folder: str | None) -> set[Path]:
    """What Inductor has compiled (kernels' shared objects and GPU binaries, precompiled
    headers) in its cache ``folder`` and its default one (the headers' place)."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir, default_cache_dir

    folders = {Path(folder or cache_dir()), Path(default_cache_dir())}
    return {
        path
        for root in folders
        for path in root.rglob("*")
        if path.suffix in (".so", ".cubin", ".hsaco", ".gch")
    }


def builds_cuda(fname: str, args: tuple, kwargs: dict[str, Any]) -> bool:
    """Whether a load_inline/load call compiles CUDA code (arguments as torch names them)."""
    if fname == "load_inline":
        cuda = (
            kwargs["cuda_sources"]
            if "cuda_sources" in kwargs
            else (args[1] if len(args) > 1 else None)
        )
        return bool(cuda)
    sources = kwargs.get("sources", args[0] if args else [])
    sources = [sources] if isinstance(sources, str) else list(sources or [])
    return any(str(src).endswith((".cu", ".cuh")) for src in sources)
