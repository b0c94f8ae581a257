"""What the candidate's code did, not what its text says: Triton launches, extensions built or loaded.

Counted in the candidate's process, so a candidate can forge the counts; what they stop is the honest mistake and
the lazy cheat (PyTorch calling PyTorch with a decorator named `jit`, or `__global__` in a docstring), which the
parent flags `no_custom_kernel`.
"""

from __future__ import annotations

import os
import sys

_counts = {"triton_launches": 0, "extensions_built": 0}
_modules_before: set[str] = set()


def install() -> None:
    """Count launches of Triton kernels (compiled and interpreted) and builds of C++/CUDA/HIP extensions."""
    _modules_before.update(sys.modules)
    try:
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction
    except ImportError:
        pass
    else:
        for kind in (JITFunction, InterpretedFunction):
            kind.run = _counting(kind.run, "triton_launches")
    from torch.utils import cpp_extension

    for name in ("load_inline", "load"):
        setattr(cpp_extension, name, _counting(getattr(cpp_extension, name), "extensions_built"))


def _counting(function, key: str):
    def counted(*args, **kwargs):
        result = function(*args, **kwargs)
        _counts[key] += 1
        return result

    counted.__wrapped__ = function
    return counted


def seen() -> dict:
    """The counts so far, and compiled modules loaded since install() from outside Python's own directories."""
    system = tuple(os.path.realpath(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix})
    loaded = []
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None) or ""
        if name in _modules_before or not path.endswith((".so", ".pyd")):
            continue
        if not os.path.realpath(path).startswith(system):
            loaded.append(name)
    return _counts | {"extension_modules": sorted(loaded)}
