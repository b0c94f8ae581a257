"""Suites: a selection of problems from a KernelBench checkout, a GPU MODE reference-kernels checkout, or a folder.

- `kernelbench:PATH`: a KernelBench checkout (its `KernelBench/levelN/` folders) or one `levelN` folder; a problem
  is an `N_Name.py` file, its id N, its key `levelL/N_Name`.
- `gpumode:PATH`: a reference-kernels checkout or any folder below it; a problem is a directory holding task.yml,
  its key the directory's path under PATH (`amd/fp8-mm`).
- `DIR`: any folder of problem files (KernelBench format) and problem directories (task.yml).

A selection is a comma-separated list of ids, id ranges and glob patterns on keys or names: `1-20,23,*ReLU*`.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kernels.problem import load_problem
from kernels.problem_types import Problem, ProblemError

SuiteKind = Literal["kernelbench", "gpumode", "dir"]
LEVEL_DIR = re.compile(r"^level(\d+)$")
NUMBERED = re.compile(r"^(\d+)_")
ID_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


class SuiteError(ValueError):
    """A suite that cannot be used (missing path, nothing selected); the message is one line."""


@dataclass(frozen=True)
class SuiteProblem:
    """One problem of a suite: a stable key, where it lives, and its KernelBench id and level when it has them."""

    key: str
    path: Path
    id: int | None = None
    level: int | None = None

    @property
    def name(self) -> str:
        """The file's stem or the directory's name: `19_ReLU`, `fp8-mm`."""
        return self.path.stem if self.path.is_file() else self.path.name

    def load(self) -> Problem:
        """The problem, read and checked (ProblemError when it is broken)."""
        return load_problem(self.path)


@dataclass(frozen=True)
class Suite:
    """The problems a spec names, in a stable order (level, id, key)."""

    spec: str
    kind: SuiteKind
    root: Path
    problems: tuple[SuiteProblem, ...]

    def select(self, selection: str | None) -> Suite:
        """The problems matching any id, range or pattern of `selection` ("1-20,23,*ReLU*"); None keeps all."""
        if not selection:
            return self
        tokens = [token.strip() for token in selection.split(",") if token.strip()]
        if not tokens:
            raise SuiteError(f"empty problem selection {selection!r}")
        chosen = tuple(p for p in self.problems if any(_matches(p, token) for token in tokens))
        if not chosen:
            raise SuiteError(f"no problem of {self.spec} matches {selection!r} ({len(self.problems)} problems in it)")
        return Suite(self.spec, self.kind, self.root, chosen)

    def load_all(self) -> tuple[dict[str, Problem], dict[str, str]]:
        """The selected problems that load, by key, and why each of the others does not.

        A suite of hundreds should not stop at one problem in a format of its own; a batch counts the broken
        ones as failures. When none loads, that is one ProblemError naming them.
        """
        loaded, broken = {}, {}
        for entry in self.problems:
            try:
                loaded[entry.key] = entry.load()
            except ProblemError as error:
                broken[entry.key] = str(error).splitlines()[0]
        if broken and not loaded:
            key, reason = next(iter(broken.items()))
            more = f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""
            raise ProblemError(f"no selected problem loads: {key}: {reason}{more}")
        return loaded, broken


def load_suite(spec: str, selection: str | None = None) -> Suite:
    """The suite a spec names (`kernelbench:PATH`, `gpumode:PATH` or `DIR`), narrowed to `selection`."""
    kind, sep, rest = spec.partition(":")
    if sep and kind in ("kernelbench", "gpumode"):
        root = Path(rest).expanduser()
    else:
        kind, root = "dir", Path(spec).expanduser()
    if not root.exists():
        raise SuiteError(f"suite path not found: {root}")
    if not root.is_dir():
        raise SuiteError(f"suite path is not a folder: {root}")
    root = root.resolve()
    find = {"kernelbench": _kernelbench, "gpumode": _gpumode, "dir": _folder}[kind]
    problems = tuple(sorted(find(root), key=lambda p: (p.level or 0, p.id if p.id is not None else -1, p.key)))
    if not problems:
        raise SuiteError(f"no problems found in {spec}")
    return Suite(spec, kind, root, problems).select(selection)


def _kernelbench(root: Path) -> list[SuiteProblem]:
    """`N_Name.py` files of a levelN folder, of every levelN folder in root, or of root/KernelBench/levelN."""
    if LEVEL_DIR.match(root.name):
        level_dirs = [root]
    else:
        base = root / "KernelBench" if (root / "KernelBench").is_dir() else root
        level_dirs = sorted(d for d in base.iterdir() if d.is_dir() and LEVEL_DIR.match(d.name))
        if not level_dirs:
            raise SuiteError(f"{root} is neither a KernelBench checkout nor a KernelBench/levelN folder")
    problems = []
    for folder in level_dirs:
        level = int(LEVEL_DIR.match(folder.name).group(1))
        for path in folder.glob("*.py"):
            number = NUMBERED.match(path.name)
            if number:
                problems.append(SuiteProblem(f"{folder.name}/{path.stem}", path, int(number.group(1)), level))
    return problems


def _gpumode(root: Path) -> list[SuiteProblem]:
    """Every directory at or below root that holds task.yml."""
    return [_entry(task.parent, root) for task in root.rglob("task.yml")]


def _folder(root: Path) -> list[SuiteProblem]:
    """Problem files (.py) and problem directories (task.yml) directly in root."""
    if (root / "task.yml").is_file():
        return [_entry(root, root)]
    files = [_entry(path, root) for path in root.glob("*.py") if not path.name.startswith("_")]
    return files + [_entry(task.parent, root) for task in root.glob("*/task.yml")]


def _entry(path: Path, root: Path) -> SuiteProblem:
    relative = path.relative_to(root).with_suffix("") if path != root else Path(root.name)
    number = NUMBERED.match(path.name)
    return SuiteProblem(relative.as_posix(), path, int(number.group(1)) if number else None)


def _matches(problem: SuiteProblem, token: str) -> bool:
    bounds = ID_RANGE.match(token)
    if bounds:
        low, high = int(bounds.group(1)), int(bounds.group(2) or bounds.group(1))
        return problem.id is not None and low <= problem.id <= high
    return fnmatch.fnmatchcase(problem.key, token) or fnmatch.fnmatchcase(problem.name, token)
