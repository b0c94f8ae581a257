"""What the candidate's code did, not what its text says: Triton launches, extensions built or loaded.

The wrappers mark the candidate's launches and extension calls for the profiled call (worker/kernel_marks.py), and
keep what kernel_share.py needs to tell its kernels from the library's: its Triton kernels' names, whether it built
or loaded an extension, and the operator namespaces its extensions registered. All of it is data in the candidate's
process; the judge decides by the profiled share, and a share that could not be measured is no evidence at all.
"""

from __future__ import annotations

import os
import sys

import torch

from evaluators.worker import kernel_marks
from evaluators.worker.on_import import when_imported

_counts = {"extensions_built": 0}
_modules_before: set[str] = set()
_launched: dict[int, object] = {}  # the Triton functions it launched: a GPU trace names their kernels after them
_namespaces: set[str] = set()  # operator namespaces that appeared while it built an extension: its own operators
_MAX_KERNELS = 256  # a bound on what a candidate launching endless distinct kernels can make us keep


def install() -> None:
    """Wrap launches of Triton kernels (compiled and interpreted) and builds of C++/CUDA/HIP extensions.

    Each module is wrapped as it is imported (at once if it already is): one the candidate never imports costs
    nothing.
    """
    _modules_before.update(sys.modules)
    when_imported("triton.runtime.jit", lambda jit: _wrap_runs(jit.JITFunction, grid_marked=False))
    when_imported("triton.runtime.interpreter", _wrap_interpreted)
    when_imported("torch.utils.cpp_extension", _wrap_builds)


def _wrap_interpreted(interpreter) -> None:
    # Where the interpreter's grid loop can be marked, the launch around it is its machinery; else the whole launch
    # stands for the kernel.
    _wrap_runs(interpreter.InterpretedFunction, grid_marked=kernel_marks.mark_interpreter_grid(interpreter))


def _wrap_runs(kind, grid_marked: bool) -> None:
    run = kind.run

    def marked(*args, **kwargs):
        if args and len(_launched) < _MAX_KERNELS:
            _launched[id(args[0])] = args[0]  # named only when asked: this runs in every timed launch
        if kernel_marks.on and args and not kwargs.get("warmup"):
            return kernel_marks.run_marked(run, _kernel_name(args[0]), grid_marked, args, kwargs)
        return run(*args, **kwargs)

    marked.__wrapped__ = run
    kind.run = marked


def _wrap_builds(cpp_extension) -> None:
    for name in ("load_inline", "load"):
        setattr(cpp_extension, name, _building(getattr(cpp_extension, name)))


def _building(function):
    def built(*args, **kwargs):
        before = _op_namespaces()
        module = function(*args, **kwargs)
        _counts["extensions_built"] += 1
        _namespaces.update(_op_namespaces() - before)
        return kernel_marks.extension(module)

    built.__wrapped__ = function
    return built


def _op_namespaces() -> set[str]:
    try:
        return {name.split("::")[0] for name in torch._C._dispatch_get_all_op_names()}
    except AttributeError:  # a torch without it: the extension's operators count as the library's
        return set()


def _kernel_name(function) -> str:
    return str(getattr(getattr(function, "fn", None), "__name__", "?"))[:200]


def own() -> dict:
    """What kernel_share.py counts as the candidate's: its Triton kernels' names, its extensions' namespaces."""
    return {
        "triton": frozenset(map(_kernel_name, list(_launched.values()))),
        "namespaces": frozenset(_namespaces),
        "extension": bool(_counts["extensions_built"] or _loaded_extensions()),
    }


def _loaded_extensions() -> list[str]:
    """Compiled modules loaded since install() from outside Python's and torch's directories.

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
    return sorted(loaded)
