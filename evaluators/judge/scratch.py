"""Workers' scratch directories: a process's all sit in a root of its own, removed once the process is gone.

The parent removes a worker's directory as it ends the worker (judge/process.py), and the root as it exits. A parent
that is killed, or that exits without its exit handlers (os._exit: a slot process whose executor is gone, a second
Ctrl-C), removes none: its workers die with it (judge/parent_death.py, worker/orphan_guard.py), and their
directories stayed in the temp directory, one for each worker it had started, spares and warm references included.
So the root's first directory starts a keeper, a process of its own session (neither a Ctrl-C to the parent's group
nor the kill of a worker's reaches it) that waits for the end of a pipe only the parent writes to, then removes the
root. The root is the parent's own (mkdtemp); what its workers wrote in it goes with shutil.rmtree, which never
follows a link.
"""

from __future__ import annotations

import atexit
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

# -I: nothing in the working directory or the environment decides what the keeper imports; -S: nor site-packages.
# It forks away from the process the parent started, so it is no child of the parent's: what ends a process's
# children as that process exits (a Ray worker does) leaves it. Its stdin reaches the end once the parent has,
# whichever way it ended. Workers die a moment after their parent: a file one of them wrote while the root went is
# gone at a later pass.
_KEEPER = """
import os, shutil, sys, time
if os.fork():
    os._exit(0)
sys.stdin.buffer.read()
for _ in range(5):
    shutil.rmtree(sys.argv[1], ignore_errors=True)
    if not os.path.lexists(sys.argv[1]):
        break
    time.sleep(1.0)
"""

_root: Path | None = None
_keeper: subprocess.Popen | None = None  # held for the process's life: its stdin is the pipe the keeper waits on
_lock = threading.Lock()


def directory(role: str) -> Path:
    """A new directory for one `role` worker, in this process's root."""
    return Path(tempfile.mkdtemp(prefix=f"ks-{role}-", dir=_own_root()))


def _own_root() -> Path:
    global _root, _keeper
    with _lock:
        if _root is None:
            root = Path(tempfile.mkdtemp(prefix="ks-run-"))
            try:
                _keeper = _start_keeper(root)
            except BaseException:
                root.rmdir()
                raise
            _root = root
        return _root


def _start_keeper(root: Path) -> subprocess.Popen:
    started = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", _KEEPER, str(root)],
        stdin=subprocess.PIPE,  # its writing end is not inherited: no worker holds it open past the parent
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,  # nor the parent's output, which a caller may be reading to its end
        cwd="/",
        start_new_session=True,
    )
    started.wait()  # it exits once the keeper is forked
    return started


def _remove_root() -> None:
    """At a normal exit, once the pools' handlers ended the workers: the root goes with the process, not after it."""
    if _root is not None:
        shutil.rmtree(_root, ignore_errors=True)


atexit.register(_remove_root)  # registered on import, before the pools' handlers, so it runs after them
