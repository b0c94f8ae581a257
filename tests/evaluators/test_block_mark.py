"""The mark of a held block's end on a GPU (worker/replies.py, mark; worker/timing.py) and the reference's watch armed
on the candidate's reply pipe (worker/window_watch.py): the parent reads the mark first and counts the command's span
once; a worker that leaves it out breaks the protocol; the reference polls the parent's pipe and reads nothing of it."""

import os
import threading
import time

import pytest

from evaluators import EvalOptions
from evaluators.judge.process import Worker, WorkerFailure
from evaluators.worker import window_watch
from evaluators.worker.replies import Replies


class _Gone:
    """The worker's process, already ended: a broken protocol has nothing left to kill."""

    pid = 0

    def poll(self):
        return 0

    def wait(self, timeout=None):
        return 0


class _Output:
    def text(self, join_timeout: float = 0.0) -> str:
        return ""


def _worker(answer) -> tuple[Worker, threading.Thread]:
    """The parent's Worker for a process played by a thread: it answers one command through the worker's Replies."""
    chan_r, chan_w = os.pipe()
    ctl_r, ctl_w = os.pipe()
    worker = Worker.__new__(Worker)
    worker.role, worker.options, worker.device, worker.stage = "candidate", EvalOptions(timeout_s=10), "cuda", "timing"
    worker.stage_seconds, worker._lock, worker._chan_r, worker._ctl_w = {}, threading.Lock(), chan_r, ctl_w
    worker.proc, worker.output = _Gone(), _Output()
    replies = Replies(chan_w, ctl_r)
    thread = threading.Thread(target=lambda: answer(replies, replies.next_command()))
    thread.start()
    return worker, thread


def _marks_then_replies(replies: Replies, command: dict) -> None:
    time.sleep(0.02)
    replies.mark("ended")
    time.sleep(0.05)  # the harness reading its events after the mark: inside the command's span
    replies.reply("timing", {"times_ms": [1.0]})


def test_a_marked_command_is_answered_by_its_mark_then_its_reply_its_span_whole_and_counted_once():
    worker, thread = _worker(_marks_then_replies)
    reply = worker.call({"cmd": "time", "mark": True}, "timing", "timing")
    thread.join()
    assert reply.event == "timing" and reply.meta == {"times_ms": [1.0]}
    assert reply.span >= 0.07
    assert worker.stage_seconds["timing"] == pytest.approx(reply.span, abs=1e-3)


def test_a_worker_that_leaves_the_mark_out_has_broken_the_protocol():
    worker, thread = _worker(lambda replies, command: replies.reply("timing", {"times_ms": [1.0]}))
    with pytest.raises(WorkerFailure) as failure:
        worker.call({"cmd": "time", "mark": True}, "timing", "timing")
    thread.join()
    assert failure.value.kind == "crash" and "where 'ended' was expected" in failure.value.message


def test_an_error_in_place_of_the_mark_is_the_commands_answer():
    worker, thread = _worker(lambda replies, command: replies.reply("error", {"error": "boom"}))
    reply = worker.call({"cmd": "time", "mark": True}, "timing", "timing")
    thread.join()
    assert reply.event == "error" and reply.meta == {"error": "boom"}


def test_the_reference_waits_on_the_parents_reply_pipe_without_reading_it():
    read_end, write_end = os.pipe()
    control_r, control_w = os.pipe()
    channel = window_watch.reply_channel(os.getpid(), read_end)
    assert channel is not None and window_watch.reply_channel(os.getpid(), read_end) == channel  # kept
    threading.Timer(0.05, lambda: os.write(write_end, b"frame")).start()
    began = time.perf_counter()
    window_watch.wait_for_frame(channel, control_r)
    assert time.perf_counter() - began >= 0.04
    assert os.read(read_end, 16) == b"frame"  # all of it is still the parent's to read
    # The parent's number reused for another candidate's pipe: opened again, that pipe's.
    other_r, other_w = os.pipe()
    os.dup2(other_r, read_end)
    reopened = window_watch.reply_channel(os.getpid(), read_end)
    assert os.fstat(reopened).st_ino == os.fstat(other_r).st_ino != os.fstat(write_end).st_ino
    threading.Timer(0.05, lambda: os.write(control_w, b"{}\n")).start()
    window_watch.wait_for_frame(reopened, control_r)  # the parent's next command ends the wait
    for fd in (read_end, write_end, control_r, control_w, other_r, other_w):
        os.close(fd)


def test_a_descriptor_the_parent_does_not_hold_opens_nothing():
    assert window_watch.reply_channel(os.getpid(), 1 << 19) is None
