"""A problem as plain text that can travel to another machine: pack it here, unpack and load it there.

A bundle is {"name", "format", "digest", "path", "files": {relpath: text}}. `path` is the problem (a KernelBench
file, or a GPU MODE directory) relative to the folder the files are laid out from; for a directory that folder
may sit above it, when `task.yml` lists files such as `../utils.py`. Nothing in a bundle is format-specific
beyond which files belong to the problem.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path, PurePosixPath

import yaml

from kernels.gpumode import HARNESS
from kernels.problem import load_problem
from kernels.problem_types import Problem, ProblemError

SUBMISSION_PLACEHOLDER = "@SUBMISSION@"  # task.yml's stand-in for the candidate, which travels separately


def pack_problem(problem: Problem) -> dict:
    """The problem's files as text, keyed by their path relative to a common folder."""
    path = problem.path.resolve()
    files = sorted(_problem_files(path)) if path.is_dir() else [path]
    root = Path(os.path.commonpath([path.parent, *(file.parent for file in files)]))
    # A file problem travels as the text it was loaded from: the file may have changed since (a candidate runs as
    # the same user). A directory's files are read now, and a change since shows as a digest that does not match.
    texts = {path: problem.source} if not path.is_dir() else {file: _read_text(file) for file in files}
    return {
        "name": problem.name,
        "format": problem.format,
        "digest": problem.digest,
        "path": path.relative_to(root).as_posix(),
        "files": {file.relative_to(root).as_posix(): text for file, text in texts.items()},
    }


def unpack_problem(bundle: dict, into: Path) -> Problem:
    """Write a bundle's files under `into` (an empty directory) and load the problem from there."""
    problem = load_problem(write_bundle(bundle, into))
    if problem.digest != bundle["digest"]:
        raise ProblemError(f"problem {bundle['name']} changed in transit (digest {problem.digest})")
    return problem


def unpack_once(bundle: dict, root: Path) -> Problem:
    """The bundle laid out under `root/<digest>` once per machine, and loaded from there.

    Every task that brings the same problem finds it at the same path, so the warm reference worker started for
    it (keyed on the path) serves the next task too. It is written in a staging folder and renamed into place:
    tasks running side by side never see half a problem.
    """
    digest = str(bundle.get("digest", ""))
    if not re.fullmatch(r"[0-9a-f]{8,64}", digest):
        raise ProblemError(f"problem {bundle.get('name')!r} has no valid digest")
    home = root / digest
    if not home.is_dir():
        root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=root))
        try:
            unpack_problem(bundle, staging)
            os.rename(staging, home)
        except OSError:
            if not home.is_dir():  # not a task beside this one that got there first
                raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    problem = load_problem(home / _safe_relpath(bundle["path"]))
    if problem.digest != digest:
        raise ProblemError(f"problem {bundle['name']}: {home} was changed on this machine (digest {problem.digest})")
    return problem


def write_bundle(bundle: dict, into: Path) -> Path:
    """Lay a bundle's files out under `into`; returns the problem's path there."""
    for relpath, text in bundle["files"].items():
        target = into / _safe_relpath(relpath)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return into / _safe_relpath(bundle["path"])


def _problem_files(directory: Path) -> set[Path]:
    """Every regular file of the directory, and every file its task.yml's `files` list points to."""
    files = {entry.resolve() for entry in directory.iterdir() if entry.is_file()}
    for source in _task_sources(directory):
        file = (directory / source).resolve()
        if not file.is_file():
            raise ProblemError(f"problem {directory.name}: task.yml lists {source}, which is not a file")
        files.add(file)
    return files


def _task_sources(directory: Path) -> list[str]:
    """The `source` of each entry in task.yml's `files`, less the submission placeholder and the format's harness.

    Our evaluator replaces that harness, so the loader neither needs nor stages it (kernels/gpumode.py).
    """
    try:
        task = yaml.safe_load((directory / "task.yml").read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ProblemError(f"problem {directory.name}: cannot read task.yml: {str(exc).splitlines()[0]}") from None
    entries = task.get("files", []) if isinstance(task, dict) else []
    sources = [entry.get("source") for entry in entries if isinstance(entry, dict) and entry.get("name") != HARNESS]
    return [source for source in sources if isinstance(source, str) and source != SUBMISSION_PLACEHOLDER]


def _read_text(file: Path) -> str:
    try:
        return file.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ProblemError(f"cannot bundle {file}: only text files travel ({type(exc).__name__})") from None


def _safe_relpath(relpath: str) -> Path:
    """A bundle path as a relative Path; one that is absolute or climbs out of the bundle is refused."""
    parts = PurePosixPath(relpath).parts
    if not parts or PurePosixPath(relpath).is_absolute() or ".." in parts:
        raise ProblemError(f"bundle path {relpath!r} leaves the bundle")
    return Path(*parts)
