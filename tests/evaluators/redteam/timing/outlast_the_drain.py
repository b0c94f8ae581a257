"""Attack (the harness's calibration raised through the drain's deadline): few_reps_forge's slow warm-up (2 blocks a
side) and a timer that claims half of each call, plus, right after the last synchronize of its rehearsal and of its
block 1 (the two the reference's blocks follow), a spin on a stream of its own that lasts the drain's deadline
(worker/device_idle.py, DEADLINE_S = 2 s) plus about the reference's block.

The reference's drain sees the spin and waits, but gives up at 2 s; the reference then times beside it, and the spin
ends (by the device's global timer) before the candidate's next command, so the candidate's synchronize never pays for
it: contrary to docs/CONTRACTS.md, "work that outlasts it falls into the candidate's next command". Time-sliced, the
spin barely moves the reference's events, but each of the reference's repetitions waits on the host for the
candidate's time slice: the reference's spans grow, wall.harness_ms (the harness's work per repetition, the median of
the reference's spans less its figure) grows by as much, and the candidate's parent figure (its span less that
harness) falls by as much, with HARNESS_SLACK's allowance rising by 15 % of it. The cover is sized from the time the
candidate saw pass between its own commands (the drain's 2 s and the reference's block).
"""

import gc
import sys
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra.cuda import globaltimer

DEADLINE_S = 2.0
DONE_BEFORE_START = 0.5


@triton.jit
def scale_shift_kernel(x_ptr, w_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
    w = tl.load(w_ptr + cols, mask=mask)
    tl.store(y_ptr + row * n_cols + cols, x * w + 1.0, mask=mask)


@triton.jit
def _spin(flag_ptr, ns):
    start = globaltimer()
    while globaltimer() - start < ns:
        pass
    tl.store(flag_ptr, 1)


def _frame_locals(name: str):
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_name != name:
        frame = frame.f_back
    return None if frame is None else frame.f_locals


class _AfterTheLoop:
    """A finalizer that runs at the first collection after the timing loop turns the collector back on."""

    def __init__(self, action):
        self.action, self.cycle = action, self

    def __del__(self):
        try:
            self.action()
        except Exception:
            pass


def after_the_loop(action) -> None:
    _AfterTheLoop(action)
    for _ in range(gc.get_threshold()[0] + 100):
        junk = []
        junk.append(junk)


_state = {"cover_s": 0.3, "left_at": None}


def leave_spin() -> None:
    flag, stream = _state["flag"], _state["stream"]
    with torch.cuda.stream(stream):
        _spin[(1,)](flag, int((DEADLINE_S + _state["cover_s"]) * 1e9))
    _state["left_at"] = time.monotonic()


def launch(x, weight, y):
    rows, cols = x.shape
    scale_shift_kernel[(rows,)](x, weight, y, cols, BLOCK=triton.next_power_of_2(cols))


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        if x.is_cuda and "flag" not in _state:
            _state["flag"], _state["stream"] = torch.zeros(1, dtype=torch.int32, device="cuda"), torch.cuda.Stream()
            _spin[(1,)](_state["flag"], 1000)  # compiled now, not inside a timing command
        if x.is_cuda and _frame_locals("warm_up") is not None:
            time.sleep(0.05)
        x = x.contiguous()
        y = torch.empty_like(x)
        local = _frame_locals("_loop")
        if local is None or not local.get("cuda"):
            launch(x, self.weight, y)
            return y
        plan, i = local["plan"], local["i"]
        if i == 0 and _state["left_at"] is not None:
            # The time since the last spin was left: the drain's deadline, the reference's block and its check.
            _state["cover_s"] = max(0.05, 0.8 * (time.monotonic() - _state["left_at"] - DEADLINE_S))
            _state["left_at"] = None
        if not plan.hold:
            launch(x, self.weight, y)
        else:
            split = int(x.shape[0] * DONE_BEFORE_START)
            launch(x[:split], self.weight, y[:split])
            late = torch.cuda.Event(enable_timing=True)
            late.record()
            local["starts"][i] = late
            launch(x[split:], self.weight, y[split:])
        if i == plan.reps - 1 and (not plan.hold or round(plan.first / max(plan.reps, 1)) == 1):
            after_the_loop(leave_spin)
        return y
