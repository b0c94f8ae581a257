"""A worker whose parent dies ends at once, with every process it started.

The parent ends a worker by killing its process group, so the control pipe closing under a worker means the parent
itself is gone (a Ray slot killed, a driver crashed). Between commands the worker reads that end of file and exits;
in the middle of one (timing a kernel, a candidate's hung call) nothing else would end it, and it would keep its
GPU memory and its share of the GPU from the evaluations that come after.

This guard is a thread of the worker's own process, which a candidate's code can defeat (the red-team attack
outlive_parent_dup2). A candidate in its own PID namespace also dies with its parent from outside its reach
(judge/parent_death.py); this guard alone ends the reference, and a candidate where `unshare` is refused or setpriv
is missing (bounded: docs/CONTRACTS.md).
"""

from __future__ import annotations

import os
import select
import signal
import threading


def start(control_fd: int) -> None:
    """Watch the control pipe from a daemon thread; when its last writer is gone, SIGKILL this process group."""
    # What the watch calls is handed to its thread now, before any candidate code runs: a candidate that replaces
    # os.killpg or this module's names later does not reach the running thread's own references.
    poller = select.poll()
    poller.register(control_fd, 0)  # no events asked for: poll still reports POLLHUP, and never spins on data
    gone = select.POLLHUP | select.POLLERR | select.POLLNVAL
    watch = threading.Thread(target=_watch, args=(poller, gone, os.killpg, signal.SIGKILL), name="orphan-guard")
    watch.daemon = True
    watch.start()


def _watch(poller, gone: int, killpg, sigkill) -> None:
    while True:
        for _, event in poller.poll():
            if event & gone:
                killpg(0, sigkill)  # 0: this process's own group, however a PID namespace numbers it
