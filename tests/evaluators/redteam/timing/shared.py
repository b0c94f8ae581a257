"""What the timing attacks share, appended to candidates/good_triton.py before each (test_redteam_timing_order.py).

The timing loop's locals (worker/timing.py, _loop), found from inside a call; a finalizer that runs at the first
collection after the loop turns the collector back on, past its last synchronize and before the reply; the honest
kernel's launch; and a timer claim: a start event recorded once part of the rows are done, put in place of the
repetition's own (as attacks/forge_times_via_frames.py does).
"""

import gc
import sys


def frame_locals(name: str):
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_name != name:
        frame = frame.f_back
    return None if frame is None else frame.f_locals


class _AfterTheLoop:
    def __init__(self, action):
        self.action, self.cycle = action, self

    def __del__(self):
        try:
            self.action()
        except Exception:
            pass


def after_the_loop(action) -> None:
    _AfterTheLoop(action)
    for _ in range(gc.get_threshold()[0] + 100):  # the youngest generation's count over its threshold
        junk = []
        junk.append(junk)


def launch(x, weight, y):
    rows, cols = x.shape
    scale_shift_kernel[(rows,)](x, weight, y, cols, BLOCK=triton.next_power_of_2(cols))


def claim_share(x, weight, local, done_before: float):
    """The call, with the repetition's start event replaced by one recorded after `done_before` of the rows."""
    y = torch.empty_like(x)
    split = int(x.shape[0] * done_before)
    launch(x[:split], weight, y[:split])
    late = torch.cuda.Event(enable_timing=True)
    late.record()
    local["starts"][local["i"]] = late
    launch(x[split:], weight, y[split:])
    return y


def held_repetition():
    """The timing loop's locals where this call is a timed repetition of a held block on CUDA, else None (the warm-up,
    the rehearsal, the trials, the side-stream probe: each attack is honest there)."""
    local = frame_locals("_loop")
    return local if local is not None and local.get("cuda") and local["plan"].hold else None


def ending_block() -> tuple[bool, int | None]:
    """Whether this call is the last repetition of a timing command on CUDA, and which block it ends (None: the
    rehearsal)."""
    local = frame_locals("_loop")
    if local is None or not local.get("cuda") or local["i"] != local["plan"].reps - 1:
        return False, None
    return True, block_of(local["plan"])


def block_of(plan) -> int | None:
    """Which block a timing command is (None: the rehearsal, which holds no outputs)."""
    return round(plan.first / max(plan.reps, 1)) if plan.hold else None


_Honest = ModelNew
