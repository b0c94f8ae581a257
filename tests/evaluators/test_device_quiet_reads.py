"""The drain's reads of device memory (worker/device_idle.Drain): timed until one is as quick as the trusted ones."""

import pytest

from evaluators.worker import device_idle
from evaluators.worker.device_idle import HISTORY, MADE, Drain


class Clock:
    def __init__(self):
        self.now = 100.0

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(device_idle, "_NOW", lambda: clock.now)
    monkeypatch.setattr(device_idle, "_SLEEP", clock.sleep)
    return clock


def reads(*values):
    """A read() that gives `values` in turn, then the last one for ever."""
    values = list(values)
    return lambda: values.pop(0) if len(values) > 1 else values[0]


CLEAR_S = 0.35  # about an H200's: 140 GiB at 2.2 ms a GiB, with the margin


def trusted(clock: Clock, read: float = 1.0) -> Drain:
    """A drain whose first wait came long after the candidate's last stop: its reads are trusted and set the mark."""
    drain = Drain(None, reads(read), CLEAR_S)
    assert drain.settle(clock.now - CLEAR_S)
    assert list(drain.history) == [read] * MADE
    return drain


def test_reads_go_on_while_they_are_slow_and_stop_at_the_first_quiet_one(clock):
    drain = trusted(clock)
    drain.read = reads(1.14, 1.14, 1.10, 1.03, 0.99)
    assert not drain.settle(clock.now)
    assert drain.reads == [1.14, 1.14, 1.10, 1.03]  # within QUIET_TOL (5 %) of the mark: done
    assert list(drain.history) == [1.0] * MADE  # reads the candidate could have slowed never join it


def test_a_process_with_no_trusted_read_waits_for_one(clock):
    """Right after the candidate's stop, with no mark yet: reads until `clear_s` after the stop, when nothing it gave
    back can still be cleared; then MADE trusted reads."""
    drain = Drain(None, reads(1.14), CLEAR_S)
    stopped = clock.now
    assert drain.settle(stopped)
    assert clock.now == pytest.approx(stopped + CLEAR_S, abs=2 * device_idle.READ_PAUSE_S)
    assert drain.mark() == 1.14


def test_reads_slow_until_they_are_trusted_are_the_devices_speed_now(clock):
    """A device slower than the mark for longer than any clearing: the trusted read joins the history, and once they
    are a quarter of it the mark follows the device."""
    drain = trusted(clock)
    drain.read = reads(1.08)
    waits = 0
    while drain.mark() < 1.08:
        assert drain.settle(clock.now)  # each such wait lasts until its reads are trusted
        waits += 1
    assert waits < HISTORY
    assert not drain.settle(clock.now) and drain.reads == [1.08]


def test_a_candidate_that_slows_every_read_cannot_move_the_mark(clock):
    """Reads the candidate can place (begun less than `clear_s` after its stop) never join the history: however many
    of the waits it slows, and whether or not the drain then stops at a slow read, the mark stays the trusted one."""
    drain = trusted(clock)
    for _ in range(10 * HISTORY):
        drain.read = reads(1.14, 1.0)
        assert not drain.settle(clock.now)
    assert drain.mark() == 1.0


def test_one_slow_trusted_read_does_not_move_the_mark(clock):
    """A clearing queued for longer than `clear_s` (memory given back, taken and given back again) slows a trusted
    read: one among the history's is outvoted."""
    drain = trusted(clock)
    drain.read = reads(*[1.14] * 1000)
    assert drain.settle(clock.now)
    assert drain.mark() == 1.0
