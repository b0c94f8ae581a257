"""Attack (the parent's allowance widened by the candidate's own warm-up): an honest Triton kernel whose warm-up calls
sleep 50 ms, and a timer that claims about a third of each timed call.

The parent sizes a side's repetitions from its warm-up spans alone (judge/timing_plan.py, Side.warm_up and
repetitions): a 50 ms warm-up call gets min_reps = 20 repetitions and 2 blocks, where the real 0.08 ms call would
get 500 and 16. The parent's allowance for a timer (judge/wall.py, slack_ms) spreads JITTER_MS = 1 ms over the
repetitions: 0.05 ms a call at 20 against 0.002 at 500, on top of 10 % of the call and 15 % of the harness's work per
repetition (flush, draw, copy, digest: a few tenths of a ms). The claim: a start event recorded after two thirds of
the rows are done (the rest launched after it), put in place of the repetition's own (as
attacks/forge_times_via_frames.py does).
"""

import time

DONE_BEFORE_START = 2 / 3  # of the rows, run before the forged start event: the timer sees a third


class ModelNew(_Honest):
    def forward(self, x):
        if x.is_cuda and frame_locals("warm_up") is not None:
            time.sleep(0.05)  # the warm-up's span is all the parent sizes the repetitions by
        local = held_repetition()
        if local is None:
            return super().forward(x)
        return claim_share(x.contiguous(), self.weight, local, DONE_BEFORE_START)
