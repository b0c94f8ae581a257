"""The candidate's own work, marked on the profiler's timeline while its one profiled call runs.

worker/kernel_share.py profiles one call per shape and needs to know which of its time is the candidate's own. The
launch wrappers of worker/evidence.py mark it here with named spans (torch.profiler.record_function):
- TRITON: a Triton kernel's launch on a GPU (the kernels launched inside it are the candidate's), or, in the
  interpreter, the run of its grid's programs, which is what the host does in the device's place;
- LAUNCH: the interpreter's whole launch, of which all but the grid is its own machinery (copying arguments,
  patching triton.language: about 1 ms a launch), counted on neither side;
- EXTENSION: a call into a function of an extension the candidate built (load_inline, load);
- FAILED: an instant inside a launch that raised, which did none of the work (the interpreter runs a broken kernel's
  programs up to its error; a GPU never runs one).
Outside that call every wrapper only reads one flag. The names carry a token drawn per process, so a candidate
that names its own annotations like ours must have read it here: forging, not a mistake.
"""

from __future__ import annotations

import functools
import secrets
import time
import types
from contextlib import contextmanager

import torch

TOKEN = f"ks-{secrets.token_hex(4)}"
CALL, TRITON, LAUNCH, EXTENSION, FAILED = (
    f"{TOKEN} {kind}" for kind in ("call", "triton", "launch", "extension", "failed")
)

on = False  # True only while the profiled call runs
_kernel: list[str] = []  # the interpreted kernel being launched, for its grid's span
_grid: list = []  # the open span of the interpreter's grid (and its thread's CPU clock), set_grid_dim to restore
# The CPU time of each grid marked in the profiled call, in order (us): a grid of 60 us that the scheduler interrupts
# reads milliseconds on the profiler's wall clock, which would count another process's time as the candidate's work.
grid_cpu_us: list[float] = []


@contextmanager
def recording():
    """The profiled call: wrapped in a CALL span, with the marks on."""
    global on
    on = True
    grid_cpu_us.clear()
    try:
        with torch.profiler.record_function(CALL):
            yield
    finally:
        on = False
        _close_grid()


def run_marked(run, kernel: str, grid_marked: bool, args, kwargs):
    """A Triton launch inside its span: TRITON on a GPU, LAUNCH in the interpreter where its grid is marked inside."""
    with torch.profiler.record_function(f"{LAUNCH if grid_marked else TRITON} {kernel}"):
        _kernel.append(kernel)
        try:
            return run(*args, **kwargs)
        except BaseException:
            with torch.profiler.record_function(FAILED):
                pass
            raise
        finally:
            _kernel.pop()


def mark_interpreter_grid(interpreter) -> bool:
    """Mark the interpreter's grid loop: it starts at set_grid_dim and ends at its patch scope's restore.

    Both are Triton's internals; where either is missing, False: the whole launch is then marked TRITON.
    """
    builder = getattr(interpreter, "interpreter_builder", None)
    scope = getattr(interpreter, "_LangPatchScope", None)
    if not (callable(getattr(builder, "set_grid_dim", None)) and callable(getattr(scope, "restore", None))):
        return False
    set_grid_dim, restore = builder.set_grid_dim, scope.restore

    def grid_starts(*args, **kwargs):
        result = set_grid_dim(*args, **kwargs)
        if on and _kernel and not _grid:
            span = torch.profiler.record_function(f"{TRITON} {_kernel[-1]}")
            span.__enter__()
            _grid.append((span, time.thread_time()))
        return result

    def grid_ends(self):
        _close_grid()  # the launch's scope is restored in a `finally`, right after its last program
        return restore(self)

    builder.set_grid_dim = grid_starts
    scope.restore = grid_ends
    return True


def _close_grid() -> None:
    while _grid:
        span, started = _grid.pop()
        span.__exit__(None, None, None)
        grid_cpu_us.append((time.thread_time() - started) * 1e6)


def extension(module):
    """A built extension with each of its functions marked EXTENSION while the profiled call runs."""
    if not isinstance(module, types.ModuleType):
        return module  # is_python_module=False: its operators are named in the trace by their namespace
    for name, value in list(vars(module).items()):
        if not name.startswith("_") and isinstance(value, types.BuiltinFunctionType):
            setattr(module, name, _marked(value, f"{EXTENSION} {module.__name__}.{name}"))
    return module


def _marked(function, label: str):
    @functools.wraps(function)
    def call(*args, **kwargs):
        if not on:
            return function(*args, **kwargs)
        with torch.profiler.record_function(label):
            return function(*args, **kwargs)

    return call
