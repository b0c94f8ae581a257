"""The problem's files on disk, watched while candidates run: a change is put back, and set against who ran then.

A candidate runs as the harness's user, so it can rewrite the problem's files. Its own evaluation is judged by the
text the job carries, but whatever loads the files next (the graph's next evaluation, a new or resumed run, the next
batch) would be judged by the candidate's. So the parent reads the watched files whenever an evaluation of this
process begins or ends, and puts back any that changed as they were when the first evaluation watching them began.
Between two such moments the same evaluations run: where one ran alone, the change was its candidate's
(`rewrote_problem`, which no strict run clears); where several did, each is set aside until a strict run clears it
(`problem_changed`). A problem loaded from a file a candidate had changed is not judged.
"""

from __future__ import annotations

import itertools
import os
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from evaluators.judge.reference_pool import EnvironmentFailure
from kernels.problem_types import Problem


@dataclass
class _Kept:
    """One watched file: its text and mode as the first evaluation watching it found them, and how many watch it."""

    text: str
    mode: int
    watchers: int = 0


@dataclass
class _State:
    files: dict[Path, _Kept] = field(default_factory=dict)
    running: dict[int, list[Path]] = field(default_factory=dict)  # each evaluation's files, by its token
    found: dict[int, dict[str, str]] = field(default_factory=dict)  # flag code -> text, by token
    # Every text found in a file's place and put back: a problem loaded from one of them is the candidate's.
    replaced: dict[Path, set[str]] = field(default_factory=dict)


_state = _State()
_lock = threading.Lock()
_tokens = itertools.count()


def watch(problem: Problem, bundle: dict) -> int:
    """Start watching the problem's files (`bundle`, as the job carries them) for one evaluation; its token.

    Raises EnvironmentFailure where the problem was loaded from a file a candidate had changed.
    """
    texts = _texts(problem, bundle)
    with _lock:
        _check()
        stale = [path for path, text in texts.items() if text in _state.replaced.get(path, ())]
        if stale:
            raise EnvironmentFailure(
                f"not judged: problem {problem.name} was loaded from {stale[0]} while a candidate had changed it "
                "(put back since)"
            )
        token, watched = next(_tokens), []
        for path in texts:
            if path not in _state.files:
                text = _read(path)
                if text is None:  # gone or unreadable already: nothing to keep
                    continue
                _state.files[path] = _Kept(text, path.stat().st_mode & 0o7777)
            _state.files[path].watchers += 1
            watched.append(path)
        _state.running[token] = watched
        return token


def release(token: int) -> list[tuple[str, str]]:
    """End one evaluation's watch; the flags (code, text) its candidate earned by changes found while it ran."""
    with _lock:
        _check()
        for path in _state.running.pop(token):
            _state.files[path].watchers -= 1
            if not _state.files[path].watchers:
                del _state.files[path]
        return list(_state.found.pop(token, {}).items())


def _check() -> None:
    """Put back every watched file that changed, and set the change against every evaluation running now."""
    changed = [path for path, kept in _state.files.items() if _read(path) != kept.text]
    if not changed:
        return
    names = ", ".join(path.name for path in changed)
    notes = "".join(_put_back(path, _state.files[path]) for path in changed)
    alone = len(_state.running) == 1
    for token in _state.running:
        found = _state.found.setdefault(token, {})
        if alone:
            found["rewrote_problem"] = f"the candidate changed the problem's files ({names}); put back{notes}"
        else:
            found.setdefault(
                "problem_changed",
                f"the problem's files ({names}) changed while {len(_state.running)} evaluations ran, this one "
                f"among them; put back{notes}",
            )


def _put_back(path: Path, kept: _Kept) -> str:
    """Replace whatever is at `path` by the kept text, in one rename; '' or why it could not be done."""
    found = _read(path)
    if found is not None:
        _state.replaced.setdefault(path, set()).add(found)
    temporary = None
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(handle, "w") as file:
            file.write(kept.text)
        os.chmod(temporary, kept.mode)
        os.replace(temporary, path)
    except OSError as exc:
        if temporary:
            Path(temporary).unlink(missing_ok=True)
        return f" (not {path.name}: {exc.strerror or exc})"
    return ""


def _texts(problem: Problem, bundle: dict) -> dict[Path, str]:
    """The bundle's files by their paths on this machine: its `path` is the problem's, under their common folder."""
    root = problem.path.resolve().parents[len(PurePosixPath(bundle["path"]).parts) - 1]
    return {root / relpath: text for relpath, text in bundle["files"].items()}


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None
