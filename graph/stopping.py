"""Stops (Ctrl-C, SIGTERM): the first asks the run to stop at a safe point, a second one exits at once.

The signal handler only sets a flag: an exception raised from it could land inside a library holding a lock (a
future's condition, the checkpointer's) and leave the run waiting forever. The run checks the flag where it is
safe: between streamed updates (`check` raises Stopped there) and as each experiment node starts, since LangGraph
lets a started task (a whole experiment) run to its end.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_asked = threading.Event()


class Stopped(Exception):
    """A stop was asked for; what had finished is saved and `--resume` continues from there."""


def check() -> None:
    """Raise Stopped once a stop was asked for."""
    if _asked.is_set():
        raise Stopped("stopped by a signal")


@contextmanager
def on_signals() -> Iterator[None]:
    """Ctrl-C and SIGTERM (kill, a scheduler, a container stop) ask for a stop; a second one exits 130 at once.

    Exiting abandons the evaluations in flight; the checkpoints stay consistent (a resume redoes only what had not
    finished).
    """

    def stop(signum: int, frame) -> None:
        # os.write, not print: the handler may run while this thread is inside a write to stderr.
        if _asked.is_set():
            os.write(2, b"interrupted again: abandoning the evaluations in flight\n")
            os._exit(130)
        _asked.set()
        os.write(2, b"interrupted: saving what has finished (again to stop at once)\n")

    previous = {number: signal.signal(number, stop) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        _asked.clear()  # a process may run again (tests, graph.batch in-process)
