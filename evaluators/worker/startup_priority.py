"""A CPU spare starts on idle CPU time only, so it never slows a timing on the host's cores; its job runs normally.

A spare imports torch (seconds of one core) while other evaluations run, and on a two-core machine that import ran
beside the interpreter's timed calls. SCHED_IDLE runs it only where a core would otherwise idle; the job puts every
thread back to SCHED_OTHER, which an unprivileged process may do (sched(7), since Linux 2.6.39).
"""

from __future__ import annotations

import os


def idle_while_starting() -> None:
    """Run this process, and every thread it starts from now, only on otherwise idle CPU time."""
    if hasattr(os, "SCHED_IDLE"):
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except OSError:
            pass  # not allowed here: the spare starts as it did before


def normal_again() -> None:
    """Every thread of this process back to the normal policy (the job is here)."""
    if not hasattr(os, "SCHED_IDLE"):
        return
    for task in _threads():
        try:
            if os.sched_getscheduler(task) == os.SCHED_IDLE:
                os.sched_setscheduler(task, os.SCHED_OTHER, os.sched_param(0))
        except OSError:
            pass  # a thread that ended meanwhile, or a policy we may not leave: its work is not timed


def _threads() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc/self/task")]
    except OSError:
        return [0]
