"""A GPU MODE problem at work inside an evaluator worker: its staged files, its inputs, ref_kernel and a submission.

Runs problem (and submission) code, so only worker processes use it; `kernels.gpumode` reads the problem without
running it.
"""

from __future__ import annotations

import importlib
import shutil
import sys
import tempfile
import types
import weakref
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path

import torch

from kernels import python_source
from kernels.cuda_on_cpu import cuda_on_cpu
from kernels.gpumode import python_sources, read_task, staged_files
from kernels.gpumode_static import cuda_only, output_buffers
from kernels.problem_types import Problem, ProblemError, Shape
from kernels.seeding import seed_everything


def derive_seed(seed: int, case_seed: int) -> int:
    """The case's seed moved by the trial's `seed`: every trial and repetition draws new inputs, reproducibly."""
    return (case_seed * 1_000_003 + seed * 7_919 + 1) % (2**31 - 1)


class GpuModeRuntime:
    """The GPU MODE format at work in a worker: `generate_input(**case)` -> data, `ref_kernel` / `custom_kernel`.

    Construct it before importing a submission: it stages the problem's files (task.py, utils.py, reference.py)
    into a scratch directory on sys.path, where `from task import ...` finds them. The data travels as a flat
    argument list (a tuple's elements); the callables pack it back into the form the format hands over.
    """

    candidate_entry = "custom_kernel"
    accepts_dist = False  # GPU MODE generators draw from their own distributions

    def __init__(self, problem: Problem, device: str):
        self.problem, self.device = problem, device
        self.shape: Shape | None = None
        self._pack: Callable[[list], object] = tuple
        files = staged_files(problem.path, read_task(problem.path))
        if problem.config_name(device) is None:
            reason = cuda_only(python_sources(files)) or "it has no cpu shapes"
            raise ProblemError(f"problem {problem.name} runs only on a GPU, not on the cpu: {reason}")
        self._staged = Path(tempfile.mkdtemp(prefix="ks-gpumode-"))
        weakref.finalize(self, shutil.rmtree, self._staged, True)
        for name, path in files.items():
            shutil.copyfile(path, self._staged / name)
            sys.modules.pop(Path(name).stem, None)  # another problem's task/utils/reference must not be reused
        sys.path.insert(0, str(self._staged))
        importlib.invalidate_caches()
        try:
            with self._on_device():
                self.module: types.ModuleType = importlib.import_module("reference")
        except Exception as exc:  # a broken problem is reported, not raised through
            reason = f"{type(exc).__name__}: {next(iter(str(exc).splitlines()), '')}"
            raise ProblemError(f"problem {problem.name}: reference.py failed to import: {reason}") from None
        self._outputs = output_buffers(python_source.parse(problem.source))

    def modules(self) -> list[types.ModuleType]:
        """The problem's own modules (reference, task, utils, ...): the harness calls into them between calls."""
        stems = [path.stem for path in self._staged.glob("*.py")]
        return [sys.modules[stem] for stem in stems if stem in sys.modules]

    def use_shape(self, shape: Shape) -> None:
        """Make `shape` current: its params are generate_input's arguments."""
        self.shape = shape

    def inputs(self, seed: int, dist: str, device: str | None = None) -> list:
        """One call's data from generate_input under a seed derived from `seed`, as a flat argument list.

        GPU MODE generators draw from their own distributions, so `dist` does not apply, and they allocate on the
        device they name, so they cannot be sized on "meta" (the evaluator then measures one real call).
        """
        if device not in (None, self.device):
            raise NotImplementedError(f"GPU MODE inputs are drawn on the problem's own device, not {device}")
        case = dict(self.shape.params if self.shape else {})
        if isinstance(case.get("seed"), int):
            case["seed"] = derive_seed(seed, case["seed"])
        seed_everything(seed)
        with self._on_device():
            data = self.module.generate_input(**case)
        if isinstance(data, (tuple, list)):
            kind = type(data)
            # A named tuple takes its fields as separate arguments.
            self._pack = (lambda args: kind(*args)) if hasattr(kind, "_fields") else kind
            return list(data)
        self._pack = lambda args: args[0]
        return [data]

    def reference(self, seed: int, device: str | None = None) -> Callable:
        """ref_kernel, taking the flat arguments (a function: nothing to build, on any device)."""
        return self._call(self.module.ref_kernel)

    def candidate(self, candidate: types.ModuleType, seed: int) -> Callable:
        """The submission's custom_kernel, taking the flat arguments."""
        kernel = getattr(candidate, self.candidate_entry, None)
        if not callable(kernel):
            raise AttributeError(f"the candidate does not define {self.candidate_entry}(data)")
        return self._call(kernel)

    def roofline(self) -> dict | None:
        """GPU MODE problems state no roofline in a form the evaluator can use."""
        return None

    def tolerance(self) -> tuple[float | None, float | None]:
        """(atol, rtol) read from check_implementation; None where it could not be read."""
        return self.problem.tolerance

    def mutable_inputs(self) -> set[int]:
        """Arguments generate_input allocates empty or zeroed for the kernel to write (e.g. fp8-mm's `c`)."""
        return set(self._outputs)

    def _call(self, kernel: Callable) -> Callable:
        def call(*args):
            with self._on_device():
                return kernel(self._pack(list(args)))

        return call

    def _on_device(self):
        """On the CPU, problem code asking for 'cuda' gets the CPU; on a GPU, 'cuda' means this runtime's GPU."""
        if self.device == "cpu":
            return cuda_on_cpu()
        if ":" in self.device:
            return torch.cuda.device(self.device)
        return nullcontext()
