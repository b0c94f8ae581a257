"""Red team: the reference's watch armed on the candidate's marks of its blocks' ends (judge/timing_plan.py `asked`
and _pins, judge/process.py Worker.marks and hand_marks, worker/window_watch.py Marks and wait_for_mark,
judge/verdicts.py _flag_unwatched), on the simulated device of test_redteam_timing_order.py.

A red team of 2026-11-28 (a helper who had not seen the design, from the code) broke its first form, which polled the
candidate's reply pipe through /proc:
- `unopenable_pipe`: a candidate that fchmods its reply pipe to 0 at import made the reference's open fail, and its
  blocks went unwatched with no flag (1.22-2.0x in the model, 1.14x for work that ends before the reply). The marks'
  read end is now handed to the reference as a descriptor (SCM_RIGHTS), whose mode is never asked
  (test_block_mark.py, test_a_pipe_the_candidate_chmodded_shut_is_still_the_references).
- `poll_misses_the_mark`: the parent reads the reply pipe too, so a reference that polled after the parent had read
  the frames slept to the pin (1.14x in the model). The marks go to a pipe only the reference reads; a mark that does
  not come before the pin is told (the pin's "marked") and, in more than a quarter of a shape's blocks, flagged.
- `host_held` (open): no pin where outputs are held on the host, so no watch; the rest must end before the seal.
"""

import pytest

from tests.evaluators.redteam import test_redteam_timing_order as order
from tests.evaluators.redteam.test_redteam_timing_order import (
    HARNESS_MS,
    WINDOW_CALL_MS,
    FinishesBeforeTheWatch,
    Worker,
    _window_share,
    codes,
    judged,
)

cuda_lock, device = order.cuda_lock, order.device  # the simulated device's fixtures


class MarksSome(FinishesBeforeTheWatch):
    """As FinishesBeforeTheWatch, but it marks the end of only the blocks `marked(b)` says: in the others its rest runs
    until the pin, unwatched, as a mark that never comes (or a reference that missed it) would have it."""

    def __init__(self, *args, marked, **kwargs):
        super().__init__(*args, **kwargs)
        self.marked, self.blocks = marked, -1

    def before_mark(self, command):
        self.blocks += 1
        return 0.0

    def marks(self) -> bool:
        return self.marked(self.blocks)


def _judged(tmp_path, device, marked):
    reference = Worker(device, "reference", WINDOW_CALL_MS, HARNESS_MS, pin_ms=0.05)
    candidate = MarksSome(device, "candidate", WINDOW_CALL_MS, HARNESS_MS, share=_window_share(), marked=marked)
    return judged(tmp_path, reference, candidate)


@pytest.mark.parametrize("marked", [lambda b: False, lambda b: b % 2 == 0], ids=["never", "every_other_block"])
def test_a_candidate_whose_marks_do_not_come_is_flagged(tmp_path, cuda_lock, device, marked):
    result = _judged(tmp_path, device, marked)
    assert "unwatched" in codes(result), (codes(result), result.speedup)


def test_a_mark_missed_in_a_few_blocks_gains_nothing_and_is_not_flagged(tmp_path, cuda_lock, device):
    """The figure is the median of the blocks' means: a few blocks unwatched do not move it."""
    result = _judged(tmp_path, device, lambda b: b % 8 != 3)
    assert "unwatched" not in codes(result) and result.speedup < 1.05, (codes(result), result.speedup)


HOST_HELD = {"side_by_side": True, "timing_sets": 2, "retained": 64, "retained_on_device": False}


@pytest.mark.xfail(strict=True, reason="open: where outputs are held on the host (memory.timing_layout, a layout a "
                   "candidate holding device memory can force) nothing is pinned and no block is watched; the rest "
                   "must end before the seal, whose handoff needs it, so the window is the end of the command: 1.14x "
                   "in this model (the red team of 2026-11-28)")  # fmt: skip
def test_work_that_ends_before_the_seal_where_outputs_are_held_on_the_host(tmp_path, cuda_lock, device):
    reference = Worker(device, "reference", WINDOW_CALL_MS, HARNESS_MS)
    candidate = FinishesBeforeTheWatch(device, "candidate", WINDOW_CALL_MS, HARNESS_MS, share=_window_share())
    result = judged(tmp_path, reference, candidate, layout=HOST_HELD)
    assert result.speedup < 1.05 or codes(result), (codes(result), result.speedup)
