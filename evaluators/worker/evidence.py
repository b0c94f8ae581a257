"""What the candidate's code did, not what its text says: Triton launches, extensions built or loaded.

Counted in the candidate's process, so a candidate can forge the counts; what they stop is the honest mistake and
the lazy cheat (PyTorch calling PyTorch with a decorator named `jit`, or `__global__` in a docstring), which the
parent flags `no_custom_kernel`.
"""

from __future__ import annotations

import os
import sys

import torch

from evaluators.worker.on_import import when_imported

_counts = {"triton_launches": 0, "extensions_built": 0}
_modules_before: set[str] = set()


def install() -> None:
    """Count launches of Triton kernels (compiled and interpreted) and builds of C++/CUDA/HIP extensions.

    Each module is wrapped as it is imported (at once if it already is): one the candidate never imports costs
    nothing.
    """
    _modules_before.update(sys.modules)
    when_imported("triton.runtime.jit", lambda jit: _count_runs(jit.JITFunction))
    when_imported("triton.runtime.interpreter", lambda interpreter: _count_runs(interpreter.InterpretedFunction))
    when_imported("torch.utils.cpp_extension", _count_builds)


def _count_runs(kind) -> None:
    kind.run = _counting(kind.run, "triton_launches")


def _count_builds(cpp_extension) -> None:
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
    """The counts so far, and compiled modules loaded since install() from outside Python's and torch's directories.

    Libraries installed beside torch (Triton's own compiled modules, imported only once the candidate uses it)
    are not the candidate's.
    """
    libraries = os.path.dirname(os.path.dirname(torch.__file__))
    system = tuple(os.path.realpath(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, libraries})
    loaded = []
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None) or ""
        if name in _modules_before or not path.endswith((".so", ".pyd")):
            continue
        if not os.path.realpath(path).startswith(system):
            loaded.append(name)
    return _counts | {"extension_modules": sorted(loaded)}
