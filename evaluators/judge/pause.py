"""Stopping a candidate's processes whenever it has no command of the parent's to answer during its timing.

The two are timed in turns (judge/timing_plan.py), and the candidate's process lives on through the reference's
turns and its check. Left running, a thread of it could keep the device or the host busy exactly then, slowing the
reference and raising the baseline, or rewrite the outputs it handed over while the reference reads them. SIGSTOP
stops every thread of a process, and no handler can catch or ignore it.

Every process the worker started is stopped, whatever process group or session it moved to: they are found as
descendants of the worker's first process, through /proc's lists of each thread's children. In its own PID
namespace an orphan is adopted by the namespace's first process, so it stays a descendant; without a namespace it
is adopted outside and is not found. Work the candidate queued on the device before it was stopped still runs
(docs/CONTRACTS.md).

A thread inside a system call stops only on its way out, so a call made just after the reply still runs to its end:
giving device memory back is such a call, and the driver's clearing of that memory outlasts it and slows the
reference's reads (worker/device_idle.py). How long the stop waited for such threads is kept (`lag_s`), and the
reference's turn waits in proportion (judge/timing_plan.py).

A stopped process can still end: a kernel timer armed before the stop delivers SIGKILL on time, and what the process
held on the device is then given back and cleared during the reference's turn, after the reference's wait for a
quiet device. So each resume counts the processes that were running at the stop and are gone or dead now (`ended`),
and the candidate is flagged for it (judge/verdicts.py).
"""

from __future__ import annotations

import os
import signal
import time
from contextlib import contextmanager
from pathlib import Path

PROC = Path("/proc")
# How long a stop may take to show in /proc (a thread in a system call stops on its way out), and how many scans
# catch processes forked while the first were being stopped.
SETTLE_S, SCANS = 0.2, 5
# How long a resume waits for the continued threads to have run and gone back to waiting: a woken process is
# scheduled only after a while on a busy host, and its command's span, timed from when it is sent, would carry that
# delay, which the reference's never does (on the 2-core CPU VM, 0.8 ms a command: honest candidates read 0.1-0.2x of
# their own reference one run in five).
AWAKE_S = 0.005


class Stopper:
    """Stops and continues the process `root`, its process group and every descendant, as often as asked."""

    def __init__(self, root: int):
        self.root = root
        self.signalled: set[int] = set()
        self.lag_s = 0.0  # how long the last stop's threads still ran after their signal, summed over the threads
        self.running: set[int] = set()  # the processes alive at the last stop
        self.ended = 0  # processes that were alive at a stop and had ended by the resume after it

    def stop(self) -> None:
        # The process group is signalled at once, and the threads of the last stop's processes looked at right away,
        # so `lag_s` is how long they were still running. A process new since, or out of the group, is seen only
        # after the scan: its lag counts from the first signal.
        signalled_at = time.monotonic()
        _signal_group(self.root, signal.SIGSTOP)
        _kill(self.root, signal.SIGSTOP)
        lag = _settle(self.signalled | {self.root})
        signalled = {self.root}
        for _ in range(SCANS):
            new = descendants(self.root) - signalled
            if not new:
                break
            for pid in new:
                _kill(pid, signal.SIGSTOP)
            signalled |= new
        late = signalled - self.signalled - {self.root}
        if late:
            _settle(late)
            lag += (time.monotonic() - signalled_at) * len(late)
        self.signalled, self.lag_s = signalled, lag
        self.running = {pid for pid in signalled if _alive(pid)}

    def resume(self) -> None:
        self.ended += sum(not _alive(pid) for pid in self.running)
        self.running = set()
        _signal_group(self.root, signal.SIGCONT)
        for pid in self.signalled:
            _kill(pid, signal.SIGCONT)
        _awake(self.signalled)


@contextmanager
def stopped(root: int):
    """Stop the process `root`, its process group and every descendant; continue them all afterwards.

    Yields the Stopper, so the caller can let them run for a while inside (judge/timing_plan.py).
    """
    stopper = Stopper(root)
    try:
        stopper.stop()
        yield stopper
    finally:
        stopper.resume()


def descendants(root: int) -> set[int]:
    """Every process below `root`, by the children each of their threads forked."""
    found, todo = set(), [root]
    while todo:
        for task in _tasks(todo.pop()):
            try:
                children = [int(pid) for pid in (task / "children").read_text().split()]
            except (OSError, ValueError):
                continue  # gone meanwhile
            for child in children:
                if child not in found:
                    found.add(child)
                    todo.append(child)
    return found


def _signal_group(group: int, number: int) -> None:
    try:
        os.killpg(group, number)
    except (ProcessLookupError, PermissionError):
        pass


def _kill(pid: int, number: int) -> None:
    try:
        os.kill(pid, number)
    except (ProcessLookupError, PermissionError):
        pass


def _settle(pids: set[int]) -> float:
    """Wait (briefly) until every thread of `pids` reads as stopped: signals arrive asynchronously.

    Returns how long threads still ran after the first look at them, summed over the threads (SETTLE_S at most each):
    threads giving memory back at once, in one process or several, each leave the driver its own share to clear. Only
    a thread seen running or in an uninterruptible call counts; one asleep (most of a process's, on a busy host) is
    only slow to take its signal.
    """
    deadline = time.monotonic() + SETTLE_S
    pending = {task: "" for pid in pids for task in _tasks(pid)}
    ran, looked = 0.0, None
    while pending and time.monotonic() < deadline:
        now = time.monotonic()
        if looked is not None:
            # each found running at the last look ran until about now
            ran += (now - looked) * sum(state in ("R", "D") for state in pending.values())
        looked = now
        pending = {task: state for task in pending if (state := _state(task)) not in (None, "T", "t", "Z", "X")}
        if pending:
            time.sleep(0.0001)
    return ran


def _awake(pids: set[int]) -> None:
    """Wait (AWAKE_S at most) until every thread of `pids` has left the stop and none is waiting to run."""
    deadline = time.monotonic() + AWAKE_S
    tasks = [task for pid in pids for task in _tasks(pid)]
    while time.monotonic() < deadline and any(_state(task) in ("T", "t", "R") for task in tasks):
        time.sleep(0.00005)


def _tasks(pid: int) -> list[Path]:
    try:
        return list((PROC / str(pid) / "task").iterdir())
    except OSError:
        return []


def _alive(pid: int) -> bool:
    """Whether process `pid` exists and has not ended (a dead child stays a zombie while its stopped parent waits)."""
    return _stat_letter(PROC / str(pid)) not in (None, "Z", "X")


def _state(task: Path) -> str | None:
    """A thread's state letter (its own name: the stops' and resumes' looks at threads, which tests count)."""
    return _stat_letter(task)


def _stat_letter(entry: Path) -> str | None:
    """The state letter of a /proc stat line (the name before it, in parentheses, may hold spaces); None if gone."""
    try:
        text = (entry / "stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2 :][:1] or None
