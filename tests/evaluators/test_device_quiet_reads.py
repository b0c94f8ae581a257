"""The drain's reads of device memory (worker/device_idle.Drain) against the mark of the device's trusted reads, which
the parent keeps (judge/quiet_reads.py)."""

import pytest

from evaluators.judge import quiet_reads
from evaluators.worker import device_idle
from evaluators.worker.device_idle import MADE, Drain


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
    monkeypatch.setattr(quiet_reads, "_reads", {})
    return clock


def reads(*values):
    """A read() that gives `values` in turn, then the last one for ever."""
    values = list(values)
    return lambda: values.pop(0) if len(values) > 1 else values[0]


CLEAR_S = 0.35  # about an H200's: 140 GiB at 2.2 ms a GiB, with the margin


def test_reads_go_on_while_they_are_slow_and_stop_at_the_first_quiet_one(clock):
    drain = Drain(None, reads(1.14, 1.14, 1.10, 1.07, 0.99), CLEAR_S)
    assert drain.settle(1.0, clock.now) == []
    assert drain.reads == [1.14, 1.14, 1.10, 1.07]  # within QUIET_TOL (8 %) of the mark: done, and not trusted
    assert 0 < clock.now - 100.0 < CLEAR_S


def test_with_no_mark_yet_the_wait_lasts_until_its_reads_are_trusted(clock):
    """Right after the candidate's stop, with no trusted read on the device yet: reads until `clear_s` after the
    stop, when nothing it gave back can still be cleared; then MADE trusted reads."""
    drain = Drain(None, reads(1.14, 1.14, 1.0), CLEAR_S)
    stopped = clock.now
    assert drain.settle(None, stopped) == [1.0] * MADE
    assert clock.now == pytest.approx(stopped + CLEAR_S, abs=2 * device_idle.READ_PAUSE_S)


def test_reads_long_after_the_stop_are_trusted_at_once(clock):
    drain = Drain(None, reads(1.2), CLEAR_S)
    assert drain.settle(1.0, clock.now - CLEAR_S) == [1.2] * MADE and clock.now == 100.0


def test_the_mark_is_a_low_quantile_of_the_devices_last_trusted_reads(monkeypatch):
    monkeypatch.setattr(quiet_reads, "_reads", {})
    assert quiet_reads.mark("cuda:0") is None
    quiet_reads.add("cuda:0", [1.0, 1.2, 1.1, 1.3])
    quiet_reads.add("cuda:1", [5.0])
    assert quiet_reads.mark("cuda:0") == 1.0 and quiet_reads.mark("cuda:1") == 5.0
    quiet_reads.add("cuda:0", [1.2] * quiet_reads.HISTORY)  # the oldest go: a device slower now becomes the mark
    assert quiet_reads.mark("cuda:0") == 1.2


def test_a_trusted_read_that_is_not_a_positive_number_is_not_kept(monkeypatch):
    monkeypatch.setattr(quiet_reads, "_reads", {})
    quiet_reads.add("cuda:0", [float("nan"), 0.0, -1.0, float("inf"), "1.0", 1.0])
    assert quiet_reads.mark("cuda:0") == 1.0


def test_a_candidate_that_slows_every_read_cannot_move_the_mark(clock):
    """Reads the candidate can place (begun less than `clear_s` after its stop) are never trusted: however many of the
    waits it slows, and whether or not the drain then stops at a slow read, the mark stays the trusted reads'."""
    quiet_reads.add("cuda", [1.0] * MADE)
    drain = Drain(None, reads(1.0), CLEAR_S)
    for _ in range(10 * quiet_reads.HISTORY):
        drain.read = reads(1.14, 1.0)
        quiet_reads.add("cuda", drain.settle(quiet_reads.mark("cuda"), clock.now))
    assert quiet_reads.mark("cuda") == 1.0


def test_one_slow_trusted_wait_does_not_move_the_mark(clock):
    """A clearing queued for longer than `clear_s` (memory given back, taken and given back again) slows a trusted
    wait's reads: one such wait among the device's is outvoted."""
    for read in (1.0, 1.0, 1.14):
        drain = Drain(None, reads(read), CLEAR_S)
        quiet_reads.add("cuda", drain.settle(quiet_reads.mark("cuda"), clock.now - CLEAR_S))
    assert quiet_reads.mark("cuda") == 1.0
