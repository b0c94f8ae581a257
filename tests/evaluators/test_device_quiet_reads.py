"""The drain's reads of device memory (worker/device_idle.Drain): timed until one is as quick as the quiet ones."""

import pytest

from evaluators.worker import device_idle
from evaluators.worker.device_idle import HISTORY, MADE, Drain


class Clock:
    def __init__(self):
        self.now = 0.0

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


def made(*then):
    """A drain made on a quiet device (MADE reads of 1.0 ms), then timing `then`."""
    return Drain(None, reads(*[1.0] * MADE, *then), CLEAR_S)


def test_reads_go_on_while_they_are_slow_and_stop_at_the_first_quiet_one(clock):
    drain = made(1.14, 1.14, 1.10, 1.03, 0.99)
    drain.settle()
    assert drain.reads == [1.14, 1.14, 1.10, 1.03]  # within QUIET_TOL (5 %) of the mark: done
    assert 0 < clock.now < CLEAR_S


def test_reads_slow_for_longer_than_any_clearing_are_the_devices_speed_now(clock):
    """No clearing outlasts the whole device's memory given back: a read still slow then is the history, and the next
    wait ends at its first read; a quicker one brings the mark down at once."""
    drain = made(1.08)
    drain.settle()
    assert clock.now == pytest.approx(CLEAR_S, abs=2 * device_idle.READ_PAUSE_S)
    assert list(drain.history) == [1.08]
    drain.settle()
    assert drain.reads == [1.08]
    drain.read = reads(1.0)
    drain.settle()
    assert drain.mark() == 1.0


def test_the_mark_is_a_low_quantile_and_one_quick_read_does_not_set_it(clock):
    """Unlike the quickest reads ever timed, a quantile does not sink as the process times more: reads 10 % quick in
    one wait in five leave honest reads quiet."""
    drain = made()
    for _ in range(HISTORY):
        drain.read = reads(0.9)
        drain.settle()
        for _ in range(4):
            drain.read = reads(1.0)
            drain.settle()
            assert drain.reads == [1.0]


def test_slow_first_reads_are_replaced_by_quieter_ones(clock):
    """Made while the device was busy, the mark is lenient at first; quiet waits later bring it down."""
    drain = Drain(None, reads(*[1.3] * MADE, 1.0), CLEAR_S)
    for _ in range(MADE):
        drain.settle()
    assert drain.mark() == 1.0
    drain.read = reads(1.2, 1.0)
    drain.settle()
    assert drain.reads == [1.2, 1.0]


def test_each_wait_gives_the_history_one_read_whatever_it_then_waits_for(clock):
    """A wait that a clearing holds for many reads adds only its first: the waits the candidate can slow (those before
    the reference's blocks) cannot fill the history with slow reads and raise the mark."""
    drain = made(*[1.14] * 20, 1.0)
    before = len(drain.history)
    drain.settle()
    assert len(drain.reads) == 21 and len(drain.history) == before + 1


def test_slow_first_reads_in_half_the_waits_leave_the_mark_quiet(clock):
    drain = made()
    for _ in range(HISTORY // 2):
        for first in (1.14, 1.0):
            drain.read = reads(first, 1.0)
            drain.settle()
    assert drain.mark() == 1.0
