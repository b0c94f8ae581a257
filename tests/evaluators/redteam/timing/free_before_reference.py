"""Attack (the reference's baseline raised through the driver): an honest Triton kernel and an honest timer, but right
after the last synchronize of its rehearsal and of its odd blocks up to 13 it gives device memory back to the driver.

The driver clears freed memory in the background: on an H200 24 GiB given back slowed another process's memory-bound
kernels by about 14 % for about 60 ms (bench/probes/free_settle.py). The reference's drain sees no context's work, and
SIGSTOP does not stop the driver. ABBA order: after the candidate's block b (odd) come the reference's blocks b and
b + 1, so each free slows two of the reference's blocks; after its rehearsal comes the reference's block 0. The free
costs 10-30 ms of host time inside the candidate's span, in 7 of its 16 blocks: under half, so the median over blocks
that the parent's clock checks never sees it. Sizes: 8 GiB before the reference's one block, 16 GiB before two.
"""

import gc
import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_shift_kernel(x_ptr, w_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
    w = tl.load(w_ptr + cols, mask=mask)
    tl.store(y_ptr + row * n_cols + cols, x * w + 1.0, mask=mask)


def _loop_locals():
    """The timing loop's locals (worker/timing.py, _loop), or None outside a timing command."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_name != "_loop":
        frame = frame.f_back
    return None if frame is None else frame.f_locals


class _AfterTheLoop:
    """Garbage in a cycle, made while the timing loop keeps the collector off: its finalizer runs at the first
    collection after the loop turns the collector back on, past the loop's last synchronize, before the reply."""

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


def give_back(gib: int) -> None:
    free, _ = torch.cuda.mem_get_info()
    nbytes = min(gib << 30, free // 2)
    if nbytes < 1 << 30:
        return
    hoard = torch.empty(nbytes, dtype=torch.int8, device="cuda")
    hoard.fill_(1)  # written, as the probe's holder's was
    del hoard
    torch.cuda.empty_cache()  # returns once freed; the driver's clearing runs on


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, cols = x.shape
        scale_shift_kernel[(rows,)](x, self.weight, y, cols, BLOCK=triton.next_power_of_2(cols))
        local = _loop_locals()
        if local is not None and local.get("cuda") and local["i"] == local["plan"].reps - 1:
            plan = local["plan"]
            index = round(plan.first / max(plan.reps, 1))
            gib = 8 if not plan.hold else 16 if index % 2 == 1 and index <= 13 else 0
            if gib:
                after_the_loop(lambda: give_back(gib))
        return y
