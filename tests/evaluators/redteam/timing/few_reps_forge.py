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

import sys
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl

DONE_BEFORE_START = 2 / 3  # of the rows, run before the forged start event: the timer sees a third


@triton.jit
def scale_shift_kernel(x_ptr, w_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
    w = tl.load(w_ptr + cols, mask=mask)
    tl.store(y_ptr + row * n_cols + cols, x * w + 1.0, mask=mask)


def _frame_locals(name: str):
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_name != name:
        frame = frame.f_back
    return None if frame is None else frame.f_locals


def launch(x, weight, y):
    rows, cols = x.shape
    scale_shift_kernel[(rows,)](x, weight, y, cols, BLOCK=triton.next_power_of_2(cols))


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        if x.is_cuda and _frame_locals("warm_up") is not None:
            time.sleep(0.05)  # the warm-up's span is all the parent sizes the repetitions by
        x = x.contiguous()
        y = torch.empty_like(x)
        local = _frame_locals("_loop")
        if local is None or not local.get("cuda") or not local["plan"].hold:
            launch(x, self.weight, y)
            return y
        split = int(x.shape[0] * DONE_BEFORE_START)
        launch(x[:split], self.weight, y[:split])
        late = torch.cuda.Event(enable_timing=True)
        late.record()
        local["starts"][local["i"]] = late
        launch(x[split:], self.weight, y[split:])
        return y
