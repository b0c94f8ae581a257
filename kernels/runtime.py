"""A problem's code at work inside an evaluator worker: per shape, its inputs, its reference and a candidate.

Runs problem (and candidate) code, so only worker processes use it. Every format presents one call as a flat
list of arguments, so the evaluator copies, checks and times every format the same way.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
import types
from collections.abc import Callable

import torch

from kernels.problem_types import Problem, ProblemError, Shape
from kernels.seeding import seed_everything


def import_problem_module(problem: Problem, config: str | None = None) -> types.ModuleType:
    """Execute the problem file as a fresh module, with the first benchmark shape of `config` applied.

    Runs problem code: the evaluator calls this only inside its worker processes.
    """
    module_name = f"ks_problem_{problem.name}_{problem.digest}"
    spec = importlib.util.spec_from_file_location(module_name, problem.path)
    module = importlib.util.module_from_spec(spec)
    try:
        sys.modules[module_name] = module
        # The text that was loaded and digested, not the file read again: another process may have written it since.
        exec(compile(problem.source, str(problem.path), "exec"), vars(module))
    except (Exception, SystemExit) as exc:  # a broken problem file is reported, not raised through
        sys.modules.pop(module_name, None)
        reason = f"{type(exc).__name__}: {next(iter(str(exc).splitlines()), '')}"
        raise ProblemError(f"problem {problem.path.name} failed to import: {reason}") from None
    if config is not None:
        if config not in problem.configs:
            raise ProblemError(f"problem {problem.name} has no configuration {config!r}")
        vars(module).update(problem.configs[config])
    return module


class ProblemRuntime:
    """The KernelBench format: shape params are module globals; Model and ModelNew take the same arguments."""

    candidate_entry = "ModelNew"

    def __init__(self, problem: Problem, device: str):
        self.problem, self.device = problem, device
        self.module: types.ModuleType = import_problem_module(problem)
        self.shape: Shape | None = None
        self.accepts_dist = "dist" in inspect.signature(self.module.get_inputs).parameters

    def use_shape(self, shape: Shape) -> None:
        """Make `shape` current: its params become the module's globals."""
        vars(self.module).update(shape.params)
        self.shape = shape

    def modules(self) -> list[types.ModuleType]:
        """The problem's own modules: the harness calls into them between the candidate's calls."""
        return [self.module]

    def inputs(self, seed: int, dist: str, device: str | None = None) -> list:
        """One call's arguments on the device (or `device`: "meta" sizes them), from the problem's own generator."""
        device = device or self.device
        seed_everything(seed)
        # Drawn on the device itself: sampling a 6 GiB input on the CPU costs seconds.
        with torch.device(device):
            raw = self.module.get_inputs(dist=dist) if self.accepts_dist else self.module.get_inputs()
        return [x.to(device) if isinstance(x, torch.Tensor) else x for x in raw]

    def _build(self, model_class, seed: int, device: str | None = None) -> Callable:
        # Model and ModelNew are built under the same seed so their parameters match (KernelBench's convention).
        seed_everything(seed)
        init_inputs = self.module.get_init_inputs()
        seed_everything(seed)
        if device == "meta":  # sizes only: no parameter is allocated or initialised
            with torch.device("meta"):
                return model_class(*init_inputs)
        return model_class(*init_inputs).to(self.device)

    def reference(self, seed: int, device: str | None = None) -> Callable:
        """The problem's reference for the current shape (on "meta": for sizing, without allocating)."""
        return self._build(self.module.Model, seed, device)

    def candidate(self, candidate: types.ModuleType, seed: int) -> Callable:
        """The candidate's implementation for the current shape."""
        model_class = getattr(candidate, self.candidate_entry, None)
        if model_class is None:
            raise AttributeError(f"the candidate does not define {self.candidate_entry}")
        return self._build(model_class, seed)

    def roofline(self) -> dict | None:
        """{"flops", "bytes"} at the current shape, when the problem states its roofline."""
        roofline = getattr(self.module, "roofline", None)
        return roofline() if callable(roofline) else None

    def tolerance(self) -> tuple[float | None, float | None]:
        """(atol, rtol) the problem states; None where it leaves the evaluator's per-dtype default."""
        return getattr(self.module, "ATOL", None), getattr(self.module, "RTOL", None)

    def mutable_inputs(self) -> set[int]:
        """Indices of arguments a call may write (an output buffer the format hands over); none here."""
        return set()


def problem_runtime(problem: Problem, device: str) -> ProblemRuntime:
    """The runtime for the problem's format."""
    if problem.format == "gpumode":
        from kernels.gpumode_runtime import GpuModeRuntime  # lazy: a KernelBench worker needs no yaml

        return GpuModeRuntime(problem, device)
    if problem.format != "kernelbench":
        raise ProblemError(f"problem {problem.name}: unknown format {problem.format!r}")
    return ProblemRuntime(problem, device)
