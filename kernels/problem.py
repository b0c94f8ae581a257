"""Load a kernel problem in KernelBench's format, by bundled name or by file path.

A problem file defines `class Model(nn.Module)`, `get_inputs()` and `get_init_inputs()`. Bundled problems
add, as plain module attributes:

- `CONFIGS`: {"gpu": {...}, "cpu": {...}}, module globals (shapes) set before `get_inputs()` is called;
- `ATOL`, `RTOL`: the comparison tolerance (else the evaluator's per-dtype default);
- `roofline()`: {"flops": int, "bytes": int} at the current globals: the least work and traffic.

Any other KernelBench file works too: without `CONFIGS` its own globals are used as they are.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

PROBLEMS_DIR = Path(__file__).parent / "problems"
SEEDS_DIR = Path(__file__).parent / "seeds"
REQUIRED = ("Model", "get_inputs", "get_init_inputs")


class ProblemError(ValueError):
    """A problem that cannot be used; the message is one line naming what is wrong."""


@dataclass(frozen=True)
class Problem:
    """A kernel problem: its source text and what the loader learned from it."""

    name: str
    path: Path
    source: str
    doc: str = ""
    configs: dict[str, dict] = field(default_factory=dict)

    @property
    def seed_path(self) -> Path | None:
        """The bundled seed candidate (`kernels/seeds/<name>.py`), if there is one."""
        path = SEEDS_DIR / f"{self.name}.py"
        return path if path.exists() else None

    @property
    def digest(self) -> str:
        """A short hash of the problem's source, to key caches and archives."""
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]

    def config_name(self, device: str) -> str | None:
        """The configuration used on `device` ("cuda" -> "gpu", "cpu" -> "cpu"), if the problem has one."""
        wanted = "cpu" if device == "cpu" else "gpu"
        return wanted if wanted in self.configs else None


def bundled_problems() -> list[str]:
    """Names of the problems shipped in `kernels/problems/`."""
    return sorted(p.stem for p in PROBLEMS_DIR.glob("*.py") if not p.name.startswith("_"))


def resolve_problem_path(name_or_path: str | Path) -> Path:
    """A bundled problem's name or any file path, as an existing path."""
    text = str(name_or_path)
    path = Path(text)
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
    configs = _configs(tree, path.name)
    return Problem(name=path.stem, path=path, source=source, doc=ast.get_docstring(tree) or "", configs=configs)


def import_problem_module(problem: Problem, config: str | None = None) -> types.ModuleType:
    """Execute the problem file as a fresh module, with `CONFIGS[config]` applied to its globals.

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


def _configs(tree: ast.Module, filename: str) -> dict[str, dict]:
    """`CONFIGS` read without running the file: {config name: {global name: literal value}}, or {}."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "CONFIGS" for t in node.targets):
            try:
                configs = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, RecursionError):
                raise ProblemError(f"problem {filename}: CONFIGS must be a literal dict of plain values") from None
            if not isinstance(configs, dict) or not all(
                isinstance(values, dict) and all(isinstance(key, str) and key.isidentifier() for key in values)
                for values in configs.values()
            ):
                raise ProblemError(f"problem {filename}: CONFIGS must map each config name to a dict of global names")
            return configs
    return {}
