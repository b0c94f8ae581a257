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
A directory holding `task.yml` is a GPU MODE reference-kernels problem (`kernels.gpumode`). Reading a problem runs
none of its code; `kernels.runtime` runs it, in workers only. What a problem is: `kernels.problem_types`.
"""

from __future__ import annotations

import ast
from pathlib import Path

from kernels import python_source
from kernels.problem_types import Problem, ProblemError, Shape, shape_name

PROBLEMS_DIR = Path(__file__).parent / "problems"
REQUIRED = ("Model", "get_inputs", "get_init_inputs")


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
        from kernels.gpumode import load_gpumode_problem  # lazy: only a GPU MODE directory needs yaml

        return load_gpumode_problem(path)
    try:
        source = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ProblemError(f"cannot read problem {path}: {exc}") from None
    try:
        tree = python_source.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise ProblemError(f"problem {path.name} has a syntax error at line {exc.lineno}: {exc.msg}") from None
    defined = _top_level_names(tree)
    missing = [name for name in REQUIRED if name not in defined]
    if missing:
        raise ProblemError(f"problem {path.name} does not define {', '.join(missing)}")
    shape_sets = _shape_sets(tree, path.name)
    doc = ast.get_docstring(tree) or ""
    return Problem(name=path.stem, path=path, source=source, doc=doc, shape_sets=shape_sets)


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
