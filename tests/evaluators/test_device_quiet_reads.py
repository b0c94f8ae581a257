"""The drain's pairs, a read of device memory and a memset (worker/device_idle.Drain): timed until one is quiet."""

import pytest

from evaluators.worker import device_idle
from evaluators.worker.device_idle import MADE, Drain


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


def pairs(*values):
    """A time_pair() that gives `values` (read ms, memset ms) in turn, then the last one for ever."""
    values = list(values)
    return lambda: values.pop(0) if len(values) > 1 else values[0]


CLEAR_S = 0.35  # about an H200's: 140 GiB at 2.2 ms a GiB, with the margin
QUIET = (1.0, 1.0)


def made(*then):
    """A drain made on a quiet device (its untimed first pair and MADE quiet ones), then timing `then`."""
    return Drain(None, pairs(QUIET, *[QUIET] * MADE, *then), CLEAR_S)


def test_a_clearing_slows_the_read_and_not_the_memset_and_is_waited_out(clock):
    drain = made((1.3, 1.3), (1.14, 1.0), (1.14, 1.0), (1.13, 1.0), (1.02, 1.0))
    drain.settle()
    assert drain.pairs == [(1.3, 1.3), (1.14, 1.0), (1.14, 1.0), (1.13, 1.0), (1.02, 1.0)]
    assert 0 < clock.now < CLEAR_S


def test_a_device_slower_as_a_whole_after_the_first_pair_is_no_reason_to_wait(clock):
    """The first pair of a wait (slow after the other side's block, both parts alike) is not judged, and a ratio
    the same as the quiet ones' with a memset within the tolerance is quiet at once."""
    drain = made((1.34, 1.26), (1.1, 1.08))
    drain.settle()
    assert drain.pairs == [(1.34, 1.26), (1.1, 1.08)] and clock.now == 0.0


def test_what_slows_both_parts_past_the_tolerance_is_waited_out(clock):
    """Copies on the copy engines take bandwidth from the memset too: the ratio alone would not see them."""
    drain = made(QUIET, (1.4, 1.4), (1.4, 1.4), QUIET)
    drain.settle()
    assert len(drain.pairs) == 4


def test_pairs_loud_for_longer_than_any_clearing_are_the_devices_state_now(clock):
    """No clearing outlasts the whole device's memory given back: the wait's pairs then become the history, and the
    next wait ends at its first judged pair."""
    drain = made(QUIET, (1.3, 1.15))
    drain.settle()
    assert clock.now == pytest.approx(CLEAR_S, abs=2 * device_idle.READ_PAUSE_S)
    assert set(drain.history) == {(1.3, 1.15)}
    drain.settle()
    assert len(drain.pairs) == 2


def test_the_marks_are_a_low_quantile_and_one_quick_pair_does_not_set_them(clock):
    """Unlike the quickest pair ever timed, a quantile does not sink as the process times more: a pair 20 % quick
    leaves honest pairs quiet."""
    drain = made(QUIET, (0.8, 0.8))
    drain.settle()
    drain.pairs = []
    drain.time_pair = pairs(QUIET, (1.1, 1.0))
    drain.settle()
    assert len(drain.pairs) == 2


def test_each_wait_gives_the_history_one_pair_whatever_it_then_waits_for(clock):
    """A wait that a clearing holds for many pairs adds only its first judged one: the waits the candidate can slow
    (those before the reference's blocks) cannot fill the history with slow pairs and raise the marks."""
    drain = made()
    before = len(drain.history)
    drain.time_pair = pairs(QUIET, *[(1.14, 1.0)] * 20, QUIET)
    drain.settle()
    assert len(drain.pairs) == 22 and len(drain.history) == before + 1
    assert list(drain.history)[-1] == (1.14, 1.0)


def test_a_history_of_slow_first_pairs_from_half_the_waits_leaves_the_marks_quiet(clock):
    drain = made()
    for _ in range(device_idle.HISTORY // 2):
        for then in ((1.14, 1.0), QUIET):
            drain.time_pair = pairs(QUIET, then, QUIET)
            drain.settle()
    assert drain.marks() == (1.0, 1.0)
