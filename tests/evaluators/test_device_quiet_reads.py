"""The drain's reads of device memory (worker/device_idle.Drain): timed until one is as quick as the quiet ones."""

import pytest

from evaluators.worker import device_idle
from evaluators.worker.device_idle import Drain


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


def test_reads_go_on_while_they_are_slow_and_stop_at_the_first_quiet_one(clock):
    drain = Drain(None, reads(1.0, 1.0, 1.0, 1.14, 1.14, 1.10, 1.03, 0.99), CLEAR_S)
    drain.settle()
    assert drain.reads == [1.14, 1.14, 1.10, 1.03]  # within QUIET_TOL (5 %) of the quiet mark: done


def test_reads_slow_for_longer_than_any_clearing_are_the_devices_speed_now(clock):
    """No clearing outlasts the whole device's memory given back: reads still slow then set the mark, and the next
    wait ends at its first read."""
    drain = Drain(None, reads(1.0, 1.0, 1.0, 1.08), CLEAR_S)
    drain.settle()
    assert clock.now == pytest.approx(CLEAR_S, abs=2 * device_idle.READ_PAUSE_S)
    assert drain.quickest_ms == [1.08, 1.08, 1.08]
    drain.settle()
    assert drain.reads == [1.08]


def test_one_unusually_quick_read_does_not_set_the_mark(clock):
    """The mark is the slowest of the QUIET_OF quickest: a single read 10 % quick leaves honest reads quiet."""
    drain = Drain(None, reads(1.0, 0.9, 1.0, 1.0, 1.01), CLEAR_S)
    drain.settle()
    assert drain.reads == [1.0]
    drain.settle()
    assert drain.reads == [1.01]


def test_slow_first_reads_are_replaced_by_quieter_ones(clock):
    """Made while the device was busy, the mark is lenient at first; quiet reads later bring it down for good."""
    drain = Drain(None, reads(1.3, 1.3, 1.3, 1.0, 1.0, 1.0, 1.2, 1.0), CLEAR_S)
    for _ in range(3):
        drain.settle()
    assert drain.quickest_ms == [1.0, 1.0, 1.0]
    drain.settle()
    assert drain.reads == [1.2, 1.0]
