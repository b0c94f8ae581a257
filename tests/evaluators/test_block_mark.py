"""The mark of a held block's end (worker/replies.py, mark; worker/timing.py) and the reference's watch armed on it
(worker/window_watch.py, Marks and wait_for_mark; judge/process.py, Worker.marks and hand_marks): the candidate writes a
byte on a pipe only the reference reads, whose read end the parent hands the reference over a socket; nothing the
candidate does to the pipe's file keeps the reference from it, and a mark that does not come is told apart."""

import fcntl
import os
import socket
import threading
import time

import pytest

from evaluators.judge.process import Worker
from evaluators.worker import window_watch
from evaluators.worker.replies import Replies


@pytest.fixture
def pipes():
    """pipes() -> (read end, write end); every one made is closed after the test."""
    made = []

    def pipe() -> tuple[int, int]:
        made.extend(os.pipe())
        return made[-2], made[-1]

    yield pipe
    for fd in made:
        try:
            os.close(fd)
        except OSError:
            pass  # closed by the test: a candidate's write end that went away


def _reference_side() -> tuple[Worker, window_watch.Marks]:
    """A parent's Worker for a reference, reduced to its side socket, and the reference's end of it."""
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    worker = Worker.__new__(Worker)
    worker._side, worker._marks_serial = parent, None
    return worker, window_watch.Marks(child.detach())


def _handed(marks_r: int, serial: int = 1) -> int:
    """The reference's own descriptor of a candidate's marks, handed over as judge/process.py hands it."""
    worker, marks = _reference_side()
    assert worker.hand_marks((serial, marks_r))
    return marks.take(True)


def test_a_candidates_marks_are_handed_once_and_read_by_the_reference_alone(pipes):
    marks_r, marks_w = pipes()
    control_r, control_w = pipes()
    worker, marks = _reference_side()
    assert worker.hand_marks((7, marks_r)) and not worker.hand_marks((7, marks_r))  # once per candidate
    taken = marks.take(True)
    assert marks.take(False) == taken and os.fstat(taken).st_ino == os.fstat(marks_r).st_ino
    replies = Replies(-1, control_r, marks_w)  # the candidate's side: its mark is one byte on the pipe
    threading.Timer(0.05, replies.mark).start()
    began = time.perf_counter()
    assert window_watch.wait_for_mark(taken, control_r) is True
    assert time.perf_counter() - began >= 0.04
    # Read: the next watch waits for the next mark, and the parent's command wakes it without one.
    threading.Timer(0.05, lambda: os.write(control_w, b"{}\n")).start()
    assert window_watch.wait_for_mark(taken, control_r) is False


def test_a_pipe_the_candidate_chmodded_shut_is_still_the_references(pipes):
    """A red team's: opened through /proc, the pipe's mode decided, and a candidate's fchmod of its end to 0 made the
    reference's open fail, and its blocks go unwatched. Handed over as a descriptor, the mode is never asked."""
    marks_r, marks_w = pipes()
    os.fchmod(marks_w, 0)
    taken = _handed(marks_r)
    os.write(marks_w, b"m")
    assert window_watch.wait_for_mark(taken, pipes()[0]) is True


def test_a_new_candidates_marks_replace_the_last_ones(pipes):
    first, second = pipes()[0], pipes()[0]
    worker, marks = _reference_side()
    worker.hand_marks((1, first))
    old = os.fstat(marks.take(True)).st_ino
    assert worker.hand_marks((2, second))
    assert old != os.fstat(marks.take(True)).st_ino == os.fstat(second).st_ino


def test_a_candidate_that_died_wakes_the_watch_with_no_mark(pipes):
    marks_r, marks_w = pipes()
    taken = _handed(marks_r)
    os.close(marks_w)
    assert window_watch.wait_for_mark(taken, pipes()[0]) is False


def test_a_flooded_mark_is_read_once_and_the_rest_wakes_the_next_watch(pipes, monkeypatch):
    """A red team's: a mark of a mebibyte, the pipe sized for it by the candidate (F_SETPIPE_SZ, no privilege needed),
    read to empty 4 KiB at a time, held the watcher's launch for 257 reads, and a writer behind it for as long as it
    wrote. One read now, whatever came; what is left wakes the next wait at once."""
    marks_r, marks_w = pipes()
    control_r = pipes()[0]
    os.set_blocking(marks_r, False)  # as Marks.take sets it
    fcntl.fcntl(marks_w, fcntl.F_SETPIPE_SZ, 1 << 20)
    os.write(marks_w, b"m" * (1 << 20))
    reads, read = [], os.read
    monkeypatch.setattr(window_watch.os, "read", lambda fd, n: reads.append(n) or read(fd, n))
    assert window_watch.wait_for_mark(marks_r, control_r) is True and len(reads) == 1
    assert window_watch.wait_for_mark(marks_r, control_r) is True  # no new mark needed: the next watch begins at once


def test_marks_handed_to_a_reference_already_gone_are_heard_by_no_one(pipes):
    """As a command sent to it: its next command's reply, not the handoff, says how it went."""
    worker, marks = _reference_side()
    marks._socket.close()
    assert worker.hand_marks((1, pipes()[0])) is True
    worker._side = None  # released
    assert worker.hand_marks((2, pipes()[0])) is True
