"""GPU MODE reference-kernels problems: a directory with task.yml, reference.py and the files task.yml lists.

task.yml's `tests` become test shapes and its `benchmarks` benchmark shapes (each case dict is the shape's
`generate_input(**case)` arguments); reference.py defines `generate_input`, `ref_kernel` and, usually,
`check_implementation`, whose tolerance is read without running it. A submission defines `custom_kernel(data)`;
`#!POPCORN` header lines in it are comments to Python and are kept as they are.
"""

from __future__ import annotations

import ast
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
import yaml

from kernels.cuda_on_cpu import cuda_on_cpu
from kernels.gpumode_static import cuda_only, output_buffers, read_tolerance
from kernels.problem import Problem, ProblemError, Shape, shape_name
from kernels.runtime import seed_everything

SUBMISSION = "@SUBMISSION@"
HARNESS = "eval.py"  # the format's own harness: our evaluator replaces it, so it is neither needed nor staged
REQUIRED = ("generate_input", "ref_kernel")
# A submission that calls the problem's own ref_kernel: the reference measured as a candidate, a run's start.
REFERENCE_SUBMISSION = '''"""The problem's own ref_kernel, as a submission."""

from reference import ref_kernel


def custom_kernel(data):
    return ref_kernel(data)
'''


def load_gpumode_problem(directory: str | Path) -> Problem:
    """Read a problem directory without running any of its code; every defect is a one-line ProblemError."""
    directory = Path(directory).resolve()
    task = _read_task(directory)
    if task.get("multi_gpu"):
        raise ProblemError(
            f"problem {directory.name} is a multi-GPU one (task.yml: multi_gpu), one process per rank: not supported"
        )
    shapes = _shapes(task, directory.name)
    files = staged_files(directory, task)
    if not files["reference.py"].is_file():
        raise ProblemError(f"problem {directory.name}: reference.py is missing")
    source = files["reference.py"].read_text()
    tree = _parse(source, f"{directory.name}/reference.py")
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    missing = [name for name in REQUIRED if name not in defined]
    if missing:
        raise ProblemError(f"problem {directory.name}: reference.py does not define {', '.join(missing)}")
    sources = _sources(files)
    helpers = [_parse(text, f"{directory.name}/{name}") for name, text in sources.items() if name != "reference.py"]
    atol, rtol, note = read_tolerance(tree, helpers)
    shape_sets = {"gpu": shapes}
    needs_gpu = cuda_only(sources)
    if needs_gpu is None:
        shape_sets["cpu"] = shapes  # generators on 'cuda' are mapped to the CPU (kernels.cuda_on_cpu)
    else:
        note += f"; runs only on a GPU: {needs_gpu}"
    ranking = task.get("ranking_by", "geom")
    doc = (str(task.get("description") or "").strip() + f"\n\nRanked by: {ranking} over the benchmarks.").strip()
    return Problem(
        name=directory.name,
        path=directory,
        source=source,
        doc=doc,
        shape_sets=shape_sets,
        format="gpumode",
        tolerance=(atol, rtol),
        tolerance_note=note,
    )


def staged_files(directory: Path, task: dict) -> dict[str, Path]:
    """The files a submission and reference.py import, by the name they are imported as, from task.yml's `files`.

    Without a `files` list every .py file beside task.yml is staged under its own name.
    """
    listed = task.get("files")
    if listed is None:
        files = {path.name: path for path in sorted(directory.glob("*.py")) if path.name != "submission.py"}
    elif isinstance(listed, list) and all(isinstance(f, dict) and {"name", "source"} <= f.keys() for f in listed):
        files = {f["name"]: (directory / f["source"]).resolve() for f in listed if f["source"] != SUBMISSION}
    else:
        raise ProblemError(f"problem {directory.name}: task.yml files must be a list of {{name, source}} entries")
    files.setdefault("reference.py", directory / "reference.py")
    files.pop(HARNESS, None)
    absent = [f"{name} ({path})" for name, path in files.items() if name != "reference.py" and not path.is_file()]
    if absent:
        raise ProblemError(f"problem {directory.name}: task.yml lists files that do not exist: {', '.join(absent)}")
    return files


def _sources(files: dict[str, Path]) -> dict[str, str]:
    return {name: path.read_text() for name, path in files.items() if name.endswith(".py")}


def _read_task(directory: Path) -> dict:
    try:
        task = yaml.safe_load((directory / "task.yml").read_text())
    except OSError as exc:
        raise ProblemError(f"problem {directory.name}: cannot read task.yml: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 1}" if where else ""
        reason = getattr(exc, "problem", None) or type(exc).__name__
        raise ProblemError(f"problem {directory.name}: task.yml is not valid YAML{line}: {reason}") from None
    if not isinstance(task, dict):
        raise ProblemError(f"problem {directory.name}: task.yml must be a mapping with tests and benchmarks")
    return task


def _shapes(task: dict, name: str) -> tuple[Shape, ...]:
    """Benchmark shapes first, then test shapes; names made unique where two cases differ only in seed."""
    if not task.get("benchmarks") or not isinstance(task["benchmarks"], list):
        raise ProblemError(f"problem {name}: task.yml needs a non-empty benchmarks list")
    if not isinstance(task.get("tests", []), list):
        raise ProblemError(f"problem {name}: task.yml tests must be a list")
    shapes, seen = [], {}
    for kind, key in (("benchmark", "benchmarks"), ("test", "tests")):
        for index, case in enumerate(task.get(key) or []):
            if not isinstance(case, dict) or not all(isinstance(k, str) and k.isidentifier() for k in case):
                raise ProblemError(f"problem {name}: task.yml {key}[{index}] is not a mapping of generate_input args")
            label = shape_name(case)
            seen[label] = seen.get(label, 0) + 1
            shapes.append(Shape(label if seen[label] == 1 else f"{label} #{seen[label]}", kind, dict(case)))
    return tuple(shapes)


def _parse(source: str, filename: str) -> ast.Module:
    try:
        return ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise ProblemError(f"problem {filename} has a syntax error at line {exc.lineno}: {exc.msg}") from None


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
        files = staged_files(problem.path, _read_task(problem.path))
        if problem.config_name(device) is None:
            reason = cuda_only(_sources(files)) or "it has no cpu shapes"
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
        self._outputs = output_buffers(ast.parse(problem.source))

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
