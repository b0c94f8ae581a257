"""GPU MODE reference-kernels problems: a directory with task.yml, reference.py and the files task.yml lists.

task.yml's `tests` become test shapes and its `benchmarks` benchmark shapes (each case dict is the shape's
`generate_input(**case)` arguments); reference.py defines `generate_input`, `ref_kernel` and, usually,
`check_implementation`, whose tolerance is read without running it. A submission defines `custom_kernel(data)`;
`#!POPCORN` header lines in it are comments to Python and are kept as they are. Reading runs none of the problem's
code; `kernels.gpumode_runtime` runs it, in workers only.
"""

from __future__ import annotations

import ast
from pathlib import Path

import yaml

from kernels import python_source
from kernels.gpumode_static import cuda_only, read_tolerance
from kernels.problem_types import Problem, ProblemError, Shape, shape_name

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
    task = read_task(directory)
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
    sources = python_sources(files)
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


def python_sources(files: dict[str, Path]) -> dict[str, str]:
    return {name: path.read_text() for name, path in files.items() if name.endswith(".py")}


def read_task(directory: Path) -> dict:
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
        return python_source.parse(source, filename=filename)
    except SyntaxError as exc:
        raise ProblemError(f"problem {filename} has a syntax error at line {exc.lineno}: {exc.msg}") from None
