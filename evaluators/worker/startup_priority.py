"""A CPU spare starts on idle CPU time only, so it never slows a timing on the host's cores; its job runs normally.

A spare imports torch (seconds of one core) while other evaluations run, and on a two-core machine that import ran
beside the interpreter's timed calls. SCHED_IDLE runs it only where a core would otherwise idle; the job puts every
thread back to SCHED_OTHER. Leaving SCHED_IDLE needs RLIMIT_NICE to allow nice 0 or CAP_SYS_NICE in the host's user
namespace (sched(7)), which a worker in its own user namespace lacks: its candidate was then timed on idle time
only, beside a reference on normal time, and read itself at 0.04-0.08x on two cores. So a spare starts idle only
where a child of the same credentials and limits shows the way back is open.
"""

from __future__ import annotations

import os


def idle_while_starting() -> None:
    """Run this process and the threads it starts on otherwise idle CPU time only, where it can come back."""
    if hasattr(os, "SCHED_IDLE") and _reversible():
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except OSError:
            pass  # not allowed here: the spare starts as it did before


def _reversible() -> bool:
    """Whether this process could leave SCHED_IDLE again: tried in a forked child, which has its credentials."""
    child = os.fork()
    if child == 0:
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        except OSError:
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(child, 0)
    return os.waitstatus_to_exitcode(status) == 0


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
