"""The candidate worker's own machinery, watched: nothing the candidate leaves behind may run inside the harness.

Between timed calls the harness draws inputs (the problem's generator, torch's samplers), and after them it reads
outputs (copies, files). A candidate that replaces one of those functions, or leaves a torch mode active, could do
its work there: outside every timed window, and with the right answer. So the worker snapshots the functions and
classes of the namespaces it relies on (torch's, the standard library's it uses, the problem's, ours) before the
candidate is imported, and after every candidate call checks that each is still the same object and that no
torch mode is active. Data (flags, counters) may change; new
attributes may appear (lazy imports); a replaced or removed function stops the evaluation.
"""

from __future__ import annotations

import builtins
import operator
import os
import random
import statistics
import sys
import time

import torch
import torch.nn.functional

# Bound at import, before candidate code can replace them.
_IS, _MAP, _ALL, _VARS, _CALLABLE = operator.is_, map, all, vars, callable
_DISPATCH_MODES, _FUNCTION_MODES = torch._C._len_torch_dispatch_stack, torch._C._len_torch_function_stack
_DISPATCH_AT, _FUNCTION_AT = torch._C._get_dispatch_stack_at, torch._C._get_function_stack_at
# The standard library the harness leans on too: a replaced random.Random would make its choice of which timed
# outputs to check predictable; a replaced builtin would run inside every loop it writes.
_LIBRARY_NAMESPACES = (torch, torch.Tensor, torch.nn.functional, torch.cuda, torch.random)
_LIBRARY_NAMESPACES += (builtins, random, random.Random, time, statistics, os, operator)
_OUR_PACKAGES = ("evaluators", "kernels")
# torch._dynamo rebinds torch.manual_seed when it is first imported (a candidate's torch.compile does). The harness
# seeds through generators bound at import (kernels/runtime.py); torch.random.manual_seed, which a problem's own
# generator may call, stays watched, so this one binding may change.
_MAY_CHANGE = {("torch", "manual_seed")}

_watched: list[tuple[str, dict, tuple, tuple]] = []


class HarnessTampering(RuntimeError):
    """The candidate left something behind that would run inside the harness's own work."""


def watch(*extra) -> None:
    """Snapshot torch's namespaces, our packages' modules and their classes, `__main__` and `extra`."""
    ours = [m for name, m in list(sys.modules.items()) if name.split(".")[0] in _OUR_PACKAGES or name == "__main__"]
    classes = [v for m in ours for v in vars(m).values() if isinstance(v, type) and v.__module__ == m.__name__]
    spaces = [*_LIBRARY_NAMESPACES, *extra, *ours, *classes]
    _watched.clear()
    for space in spaces:
        namespace = _VARS(space)
        label = getattr(space, "__name__", type(space).__name__)
        names = tuple(n for n, v in namespace.items() if _CALLABLE(v) and (label, n) not in _MAY_CHANGE)
        _watched.append((label, namespace, names, tuple(namespace[name] for name in names)))


def check() -> None:
    """After a candidate call: no torch mode active, and every watched function still the one snapshotted."""
    active = [type(_DISPATCH_AT(i)).__name__ for i in range(_DISPATCH_MODES())]
    active += [type(_FUNCTION_AT(i)).__name__ for i in range(_FUNCTION_MODES())]
    if active:
        raise HarnessTampering(
            f"the candidate left torch mode(s) {active} active after its call (torch.set_default_device is one): "
            "they would run inside the harness's reads of its outputs; leave every mode before returning"
        )
    for label, namespace, names, values in _watched:
        if not _ALL(_MAP(_IS, _MAP(namespace.get, names), values)):
            name = next(n for n, v in zip(names, values, strict=True) if namespace.get(n) is not v)
            raise HarnessTampering(
                f"the candidate replaced {label}.{name}, which the harness relies on between and after its calls "
                "(drawing inputs, timing, reading outputs); leave library and harness functions as they are"
            )
