"""A candidate's worker ends when its parent does, whatever the candidate does inside its PID namespace.

The worker's own orphan guard (worker/orphan_guard.py) is a thread of the candidate's process, which candidate code
can defeat. `unshare` is out of its reach: it stays in the parent's PID namespace, where the candidate can neither
name it nor signal it. Given SIGKILL as its parent-death signal (setpriv), it dies with the parent; its
--kill-child then kills the namespace's first process, and with it the kernel kills every process of the namespace.

The kernel sends that signal when the thread that forked the process ends, not the process: a worker forked by an
evaluation's thread would die with that thread. So every worker is forked by one thread that lives as long as this
process does.

The namespace's first process is a shell, which a process with capabilities in the namespace could trace and make
clear its own parent-death signal (--kill-child's); the worker runs without any, though it is root there.
"""

from __future__ import annotations

import functools
import os
import queue
import shutil
import subprocess
import threading
from concurrent.futures import Future

_requests: queue.SimpleQueue | None = None
_lock = threading.Lock()


@functools.cache
def _setpriv() -> str | None:
    """The path of a setpriv that knows every option used here (--pdeathsig came last, in util-linux 2.33)."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    probe = subprocess.run([setpriv, "--pdeathsig", "KILL", "--inh-caps=-all", "true"], capture_output=True, timeout=10)
    return setpriv if probe.returncode == 0 else None


def dies_with_parent(command: list[str]) -> list[str]:
    """`command`, run with SIGKILL as its parent-death signal where setpriv is installed (else as it is).

    A parent that dies before setpriv sets the signal leaves a worker that has run no candidate code yet: its
    own guard sees the control pipe close.
    """
    setpriv = _setpriv()
    return [setpriv, "--pdeathsig", "KILL", *command] if setpriv else command


def without_capabilities(command: list[str]) -> list[str]:
    """`command` with no capabilities, even as root of its user namespace, where setpriv is installed."""
    setpriv = _setpriv()
    return [setpriv, "--bounding-set=-all", "--inh-caps=-all", *command] if setpriv else command


def popen(*args, **kwargs) -> subprocess.Popen:
    """subprocess.Popen(*args, **kwargs), forked by this process's spawning thread."""
    started: Future[subprocess.Popen] = Future()
    _spawner().put((started, args, kwargs))
    return started.result()


def _spawner() -> queue.SimpleQueue:
    global _requests
    with _lock:
        if _requests is None:
            _requests = queue.SimpleQueue()
            threading.Thread(target=_spawn, args=(_requests,), daemon=True, name="ks-spawner").start()
        return _requests


def _spawn(requests: queue.SimpleQueue) -> None:
    while True:
        started, args, kwargs = requests.get()
        try:
            started.set_result(subprocess.Popen(*args, **kwargs))
        except Exception as exc:
            started.set_exception(exc)


def _forget_spawner() -> None:
    """In a forked child: the spawning thread was not copied, and the lock may have been held by one that was not."""
    global _requests, _lock
    _requests, _lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_spawner)
