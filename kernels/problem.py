"""Load a kernel problem, by bundled name, KernelBench file path, or GPU MODE problem directory.

A problem file defines `class Model(nn.Module)`, `get_inputs()` and `get_init_inputs()`. Bundled problems
add, as plain module attributes:

- `SHAPES`: {"gpu": {"benchmark": [globals, ...], "test": [globals, ...]}, "cpu": {...}}: each shape is a dict
  of module globals set before `get_init_inputs()` and `get_inputs()` are called. Benchmark shapes are
  checked and timed; test shapes (awkward sizes) are checked only. The older `CONFIGS` ({"gpu": globals,
  "cpu": globals}) still reads as one benchmark shape per device.
- `ATOL`, `RTOL`: the comparison tolerance (else the evaluator's per-dtype default);
- `roofline()`: {"flops": int, "bytes": int} at the current globals: the least work and traffic.

Any other KernelBench file works too: without `SHAPES` its own globals are its one benchmark shape.
A directory holding `task.yml` is a GPU MODE reference-kernels problem (`kernels.gpumode`).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

PROBLEMS_DIR = Path(__file__).parent / "problems"
SEEDS_DIR = Path(__file__).parent / "seeds"
REQUIRED = ("Model", "get_inputs", "get_init_inputs")
# What a problem's `get_inputs(dist=...)` may be asked for; correctness trials cycle through them.
DISTRIBUTIONS = ("normal", "uniform", "heavy")


class ProblemError(ValueError):
    """A problem that cannot be used; the message is one line naming what is wrong."""


@dataclass(frozen=True)
class Shape:
    """One input configuration: `params` are module globals (KernelBench) or generate_input kwargs (GPU MODE)."""

    name: str
    kind: Literal["benchmark", "test"]
    params: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        """The shape as a job file carries it."""
        return {"name": self.name, "kind": self.kind, "params": self.params}

    @classmethod
    def from_json(cls, data: dict) -> Shape:
        """The inverse of `to_json`."""
        return cls(data["name"], data["kind"], dict(data["params"]))


def shape_name(params: dict) -> str:
    """A readable name from a shape's values: "M=16384 N=4096" (a GPU MODE seed is not part of it)."""
    return " ".join(f"{key}={value}" for key, value in params.items() if key != "seed") or "default"


@dataclass(frozen=True)
class Problem:
    """A kernel problem: its source text and what the loader learned from it.

    `format` is "kernelbench" (Model / get_inputs) or "gpumode" (generate_input / ref_kernel, candidates define
    custom_kernel); `shape_sets` maps "gpu" and "cpu" to that device's shapes, benchmark shapes first.
    """

    name: str
    path: Path
    source: str
    doc: str = ""
    shape_sets: dict[str, tuple[Shape, ...]] = field(default_factory=dict)
    format: Literal["kernelbench", "gpumode"] = "kernelbench"
    tolerance: tuple[float | None, float | None] = (None, None)
    tolerance_note: str = ""

    @property
    def configs(self) -> dict[str, dict]:
        """Each device's first benchmark shape, as module globals (what single-shape callers read)."""
        return {name: shapes[0].params for name, shapes in self.shape_sets.items() if shapes}

    @property
    def seed_path(self) -> Path | None:
        """The bundled seed candidate (`kernels/seeds/<name>.py`), if there is one."""
        path = SEEDS_DIR / f"{self.name}.py"
        return path if path.exists() else None

    @property
    def digest(self) -> str:
        """A short hash of the problem's source, to key caches and archives."""
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]

    def reference_as_candidate(self) -> str:
        """The reference as a valid candidate with no kernel of its own: measured, it gives the reference's runtime."""
        alias = "custom_kernel = ref_kernel" if self.format == "gpumode" else "ModelNew = Model"
        return f"{self.source.rstrip()}\n\n\n{alias}\n"

    def config_name(self, device: str) -> str | None:
        """The shape set used on `device` ("cuda" -> "gpu", "cpu" -> "cpu"), if the problem has one."""
        wanted = "cpu" if device == "cpu" else "gpu"
        return wanted if wanted in self.shape_sets else None

    def shapes(self, device: str) -> tuple[Shape, ...]:
        """The shapes evaluated on `device`: its shape set, else the file's own globals as one benchmark shape."""
        config = self.config_name(device)
        return self.shape_sets[config] if config else (Shape("default", "benchmark", {}),)

    def benchmark_shapes(self, device: str) -> tuple[Shape, ...]:
        """The shapes that are timed on `device`."""
        return tuple(shape for shape in self.shapes(device) if shape.kind == "benchmark")


def bundled_problems() -> list[str]:
    """Names of the problems shipped in `kernels/problems/`."""
    return sorted(p.stem for p in PROBLEMS_DIR.glob("*.py") if not p.name.startswith("_"))


def resolve_problem_path(name_or_path: str | Path) -> Path:
    """A bundled problem's name, any file path or a GPU MODE problem directory, as an existing path."""
    text = str(name_or_path)
    path = Path(text)
    if path.is_dir():
        if not (path / "task.yml").is_file():
            raise ProblemError(f"problem directory {text} has no task.yml (a GPU MODE problem needs one)")
        return path.resolve()
    if path.suffix == ".py" or path.exists() or "/" in text:
        if not path.is_file():
            raise ProblemError(f"problem file not found: {text}")
        return path.resolve()
    bundled = PROBLEMS_DIR / f"{text}.py"
    if not bundled.is_file():
        raise ProblemError(f"unknown problem {text!r}; bundled: {', '.join(bundled_problems())}")
    return bundled


def load_problem(name_or_path: str | Path) -> Problem:
    """Read and check a problem without executing it: syntax and the three required names."""
    path = resolve_problem_path(name_or_path)
    if path.is_dir():
        from kernels.gpumode import load_gpumode_problem  # the GPU MODE format's own loader

        return load_gpumode_problem(path)
    try:
        source = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ProblemError(f"cannot read problem {path}: {exc}") from None
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise ProblemError(f"problem {path.name} has a syntax error at line {exc.lineno}: {exc.msg}") from None
    defined = _top_level_names(tree)
    missing = [name for name in REQUIRED if name not in defined]
    if missing:
        raise ProblemError(f"problem {path.name} does not define {', '.join(missing)}")
    shape_sets = _shape_sets(tree, path.name)
    doc = ast.get_docstring(tree) or ""
    return Problem(name=path.stem, path=path, source=source, doc=doc, shape_sets=shape_sets)


def import_problem_module(problem: Problem, config: str | None = None) -> types.ModuleType:
    """Execute the problem file as a fresh module, with the first benchmark shape of `config` applied.

    Runs problem code: the evaluator calls this only inside its worker processes.
    """
    module_name = f"ks_problem_{problem.name}_{problem.digest}"
    spec = importlib.util.spec_from_file_location(module_name, problem.path)
    module = importlib.util.module_from_spec(spec)
    try:
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # a broken problem file is reported, not raised through
        sys.modules.pop(module_name, None)
        reason = f"{type(exc).__name__}: {next(iter(str(exc).splitlines()), '')}"
        raise ProblemError(f"problem {problem.path.name} failed to import: {reason}") from None
    if config is not None:
        if config not in problem.configs:
            raise ProblemError(f"problem {problem.name} has no configuration {config!r}")
        vars(module).update(problem.configs[config])
    return module


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _literal(tree: ast.Module, name: str, filename: str):
    """The value of a top-level `name = <literal>` assignment, or None when the file has none."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            try:
                return ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, RecursionError):
                raise ProblemError(f"problem {filename}: {name} must be a literal dict of plain values") from None
    return None


def _globals_dict(values, filename: str, what: str) -> dict:
    if not isinstance(values, dict) or not all(isinstance(key, str) and key.isidentifier() for key in values):
        raise ProblemError(f"problem {filename}: {what} must be a dict of global names")
    return values


def _shape_sets(tree: ast.Module, filename: str) -> dict[str, tuple[Shape, ...]]:
    """`SHAPES` (or the older `CONFIGS`) read without running the file: {"gpu"|"cpu": shapes, benchmarks first}."""
    declared = _literal(tree, "SHAPES", filename)
    if declared is not None:
        if not isinstance(declared, dict) or not declared:
            raise ProblemError(f"problem {filename}: SHAPES must map 'gpu' and/or 'cpu' to benchmark and test lists")
        sets = {}
        for device, kinds in declared.items():
            if not isinstance(kinds, dict) or not kinds.get("benchmark") or set(kinds) - {"benchmark", "test"}:
                raise ProblemError(f"problem {filename}: SHAPES[{device!r}] needs a non-empty 'benchmark' list")
            sets[device] = tuple(
                Shape(shape_name(_globals_dict(params, filename, f"SHAPES[{device!r}][{kind!r}]")), kind, params)
                for kind in ("benchmark", "test")
                for params in kinds.get(kind, [])
            )
        return sets
    configs = _literal(tree, "CONFIGS", filename)
    if configs is None:
        return {}
    if not isinstance(configs, dict):
        raise ProblemError(f"problem {filename}: CONFIGS must map each config name to a dict of global names")
    sets = {}
    for name, params in configs.items():
        if not isinstance(params, dict) or not all(isinstance(k, str) and k.isidentifier() for k in params):
            raise ProblemError(f"problem {filename}: CONFIGS must map each config name to a dict of global names")
        sets[name] = (Shape(shape_name(params), "benchmark", params),)
    return sets
