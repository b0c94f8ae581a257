"""The mark of a held block's end (worker/replies.py, mark; worker/timing.py) and the reference's watch armed on it
(worker/window_watch.py, Marks and wait_for_mark; judge/process.py, Worker.marks and hand_marks): the candidate writes a
byte on a pipe only the reference reads, whose read end the parent hands the reference over a socket; nothing the
candidate does to the pipe's file keeps the reference from it, and a mark that does not come is told apart."""

import os
import socket
import threading
import time

from evaluators.judge.process import Worker
from evaluators.worker import window_watch
from evaluators.worker.replies import Replies


def _reference_side() -> tuple[Worker, window_watch.Marks]:
    """A parent's Worker for a reference, reduced to its side socket, and the reference's end of it."""
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    worker = Worker.__new__(Worker)
    worker._side, worker._marks_serial = parent, None
    return worker, window_watch.Marks(child.detach())


def test_a_candidates_marks_are_handed_once_and_read_by_the_reference_alone():
    marks_r, marks_w = os.pipe()
    control_r, control_w = os.pipe()
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
    for fd in (marks_r, marks_w, control_r, control_w):
        os.close(fd)


def test_a_pipe_the_candidate_chmodded_shut_is_still_the_references():
    """A red team's: opened through /proc, the pipe's mode decided, and a candidate's fchmod of its end to 0 made the
    reference's open fail, and its blocks go unwatched. Handed over as a descriptor, the mode is never asked."""
    marks_r, marks_w = os.pipe()
    control_r, control_w = os.pipe()
    os.fchmod(marks_w, 0)
    worker, marks = _reference_side()
    worker.hand_marks((1, marks_r))
    taken = marks.take(True)
    os.write(marks_w, b"m")
    assert window_watch.wait_for_mark(taken, control_r) is True
    for fd in (marks_r, marks_w, control_r, control_w):
        os.close(fd)


def test_a_new_candidates_marks_replace_the_last_ones():
    first_r, first_w = os.pipe()
    second_r, second_w = os.pipe()
    worker, marks = _reference_side()
    worker.hand_marks((1, first_r))
    old = os.fstat(marks.take(True)).st_ino
    assert worker.hand_marks((2, second_r))
    new = marks.take(True)
    assert old != os.fstat(new).st_ino == os.fstat(second_r).st_ino
    for fd in (first_r, first_w, second_r, second_w):
        os.close(fd)


def test_a_candidate_that_died_wakes_the_watch_with_no_mark():
    marks_r, marks_w = os.pipe()
    control_r, control_w = os.pipe()
    worker, marks = _reference_side()
    worker.hand_marks((3, marks_r))
    taken = marks.take(True)
    os.close(marks_w)
    assert window_watch.wait_for_mark(taken, control_r) is False
    for fd in (marks_r, control_r, control_w):
        os.close(fd)
