"""The candidate's processes stopped while the reference is timed: no thread or child of it runs in those turns."""

import os
import signal
import subprocess
import sys
import time

import pytest

from evaluators import EvalOptions, evaluate
from evaluators.judge import pause, reference_pool
from evaluators.judge.process import Worker, pid_namespace_available
from tests.evaluators.conftest import PROBLEM, candidate

# Beats every half millisecond from a thread and from a child that left the process group and the session.
HEARTBEATS = """

import os as _os, threading as _threading, time as _time

def _beat(path):
    fd = _os.open(path, _os.O_WRONLY | _os.O_CREAT | _os.O_APPEND, 0o600)
    while True:
        _os.write(fd, b"%.7f\\n" % _time.perf_counter())
        _time.sleep(0.0005)

if _os.fork() == 0:
    _os.setsid()
    _beat({child!r})
_threading.Thread(target=_beat, args=({thread!r},), daemon=True).start()
"""

TREE = """
import os, threading, time
if os.fork() == 0:
    os.setsid()
    while True: time.sleep(0.001)
threading.Thread(target=lambda: [time.sleep(0.001) for _ in iter(int, 1)], daemon=True).start()
while True: time.sleep(0.001)
"""


def _states(pids) -> dict[int, str]:
    return {pid: pause._state(pause.PROC / str(pid) / "task" / str(pid)) for pid in pids}


@pytest.fixture
def namespaced_tree():
    """A worker-like tree in its own PID namespace: unshare, a shell, python with a thread and a setsid child."""
    if not pid_namespace_available():
        pytest.skip("no unprivileged PID namespace here")
    command = ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc", "--kill-child"]
    command += ["/bin/sh", "-c", '"$@"; exit $?', "tree", sys.executable, "-c", TREE]
    proc = subprocess.Popen(command, start_new_session=True)
    deadline = time.monotonic() + 10
    while len(pause.descendants(proc.pid)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    yield proc
    proc.kill()
    proc.wait()


def test_every_process_below_the_worker_is_stopped_and_continued(namespaced_tree):
    """The shell, the python process and its child in a session of its own: all stopped, then all running again."""
    below = pause.descendants(namespaced_tree.pid)
    assert len(below) == 3
    with pause.stopped(namespaced_tree.pid):
        assert set(_states(below | {namespaced_tree.pid}).values()) == {"T"}
    time.sleep(0.05)
    assert "T" not in _states(below).values()


def test_no_beat_of_the_candidate_falls_inside_a_reference_command(tmp_path, monkeypatch):
    """Its thread and its escaped child beat every 0.5 ms; none while the reference is warmed, timed or probed."""
    child, thread = tmp_path / "child-beats", tmp_path / "thread-beats"
    source = candidate("torch_only") + HEARTBEATS.format(child=str(child), thread=str(thread))
    windows = []
    call = Worker.call

    def recording(self, command, event, stage):
        sent = time.perf_counter()
        reply = call(self, command, event, stage)
        if self.role == "reference" and command["cmd"] in ("warm", "time", "probe"):
            windows.append((sent, time.perf_counter()))
        return reply

    monkeypatch.setattr(Worker, "call", recording)
    reference_pool.close_all()
    try:
        result = evaluate(str(PROBLEM), source, "cpu", EvalOptions(cache_dir=tmp_path, timeout_s=60))
    finally:
        reference_pool.close_all()
    assert result.status == "correct", result.message
    beats = [float(line) for path in (thread, child) for line in path.read_text().split()]
    assert len(windows) >= 5 and len(beats) > 100  # on the CPU: warm-up, three blocks, none timed
    inside = [b for b in beats for sent, received in windows if sent < b < received]
    assert not inside, f"{len(inside)} beats during the reference's {len(windows)} commands"
    # The candidate ran between the reference's commands: its beats come from both sides of them.
    first, last = windows[0][0], windows[-1][1]
    assert any(first < b < last for b in beats)


class Clock:
    """pause.time on a simulated clock: each look at the threads (a sleep between them) moves it by `step`."""

    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += self.step


@pytest.fixture
def sleeping_child():
    """A real process to stop and continue; the tests set what its threads' states read."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    yield child
    child.kill()
    child.wait()


def test_a_stop_says_how_long_it_waited_for_a_thread_still_in_a_system_call(monkeypatch, sleeping_child):
    """A thread that was giving device memory back as it was stopped runs on to the end of its call; the stop waits
    and says how long (judge/timing_plan.py waits in proportion before the reference's turn). A thread asleep is only
    slow to take its signal: that does not count."""
    monkeypatch.setattr(pause, "time", Clock(1e-3))  # each look 1 ms after the last
    looks = iter(["D"] * 20 + ["S"] * 20)  # in an uninterruptible call for 20 looks, asleep for 20, then stopped
    monkeypatch.setattr(pause, "_state", lambda task: next(looks, "T"))
    stopper = pause.Stopper(sleeping_child.pid)
    stopper.stop()
    assert stopper.lag_s == pytest.approx(20e-3)  # one thread, 20 intervals in its call
    monkeypatch.setattr(pause, "_state", lambda task: "T")
    stopper.resume()
    stopper.stop()
    assert stopper.lag_s == 0.0  # stopped at the first look
    stopper.resume()


def test_a_resume_returns_once_the_threads_have_run_and_wait_again(monkeypatch, sleeping_child):
    """A continued process is scheduled only after a while on a busy host: the command is sent once its threads are
    back waiting, so its span does not carry the delay (the reference's never does). A thread that never waits (a
    spin) holds the resume AWAKE_S at most."""
    clock = Clock(1e-4)
    monkeypatch.setattr(pause, "time", clock)
    stopper = pause.Stopper(sleeping_child.pid)
    monkeypatch.setattr(pause, "_state", lambda task: "T")
    stopper.stop()
    looks = iter(["T", "R", "R", "S"])
    monkeypatch.setattr(pause, "_state", lambda task: next(looks, "S"))
    started = clock.now
    stopper.resume()
    assert clock.now - started == pytest.approx(3e-4)  # three looks found it stopped or waiting to run
    monkeypatch.setattr(pause, "_state", lambda task: "R")
    stopper.stop()
    started = clock.now
    stopper.resume()
    assert clock.now - started == pytest.approx(pause.AWAKE_S, abs=2e-4)


def test_a_process_that_ends_while_stopped_is_counted_at_the_resume():
    """A stopped process can still be killed (a timer armed before the stop delivers SIGKILL on time): the resume counts
    it, and what it held was given back during the reference's turn."""
    parent = subprocess.Popen([sys.executable, "-c", CHILD_OF_ITS_OWN], stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        stopper = pause.Stopper(parent.pid)
        stopper.stop()
        stopper.resume()
        assert stopper.ended == 0
        stopper.stop()
        os.kill(child, signal.SIGKILL)
        time.sleep(0.2)
        stopper.resume()
        assert stopper.ended == 1  # a zombie while its stopped parent could not wait for it
    finally:
        parent.kill()
        parent.wait(10)


CHILD_OF_ITS_OWN = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(child.pid, flush=True)
time.sleep(60)
"""
