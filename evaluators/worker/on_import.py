"""Run a function on a module once it is imported: at once if it already is, else as its import finishes.

A worker wraps torch's extension builder and counts Triton's launches before the candidate can reach them, without
importing either itself: a CLI's workers have their job at once, and importing them anyway put 0.2-0.3 s of each
worker's start on a cold evaluation's path, for candidates and references that never use them
(docs/BENCHMARKS_HISTORY.md).
"""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Callable
from types import ModuleType

_pending: dict[str, list[Callable[[ModuleType], None]]] = {}


def when_imported(name: str, then: Callable[[ModuleType], None]) -> None:
    """Call `then(module)` on module `name` now if it is imported, else right after its code has run."""
    module = sys.modules.get(name)
    if module is not None:
        then(module)
        return
    _pending.setdefault(name, []).append(then)
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for a watched name, it asks the finders after it and wraps the loader they give."""

    def find_spec(self, name, path, target=None):
        if name not in _pending:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if finder is not self and find else None
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None:
            # The functions are taken when the module runs, not here: a spec found only to ask whether a module
            # exists (importlib.util.find_spec, as libraries ask for Triton) is never loaded, and the import after it
            # must still run them.
            spec.loader = _Then(spec.loader, name)
        return spec


class _Then:
    """A loader that runs the module's own loader, then the functions waiting for it; anything else it forwards."""

    def __init__(self, loader, name: str):
        self._loader, self._name = loader, name

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        for then in _pending.pop(self._name, []):
            then(module)

    def __getattr__(self, name: str):
        return getattr(self._loader, name)
