"""Attack (the reference's baseline raised by copy engines; speculative): an honest Triton kernel and an honest timer,
but right after the last synchronize of its rehearsal and of its odd blocks it queues device-to-device copies on a
stream of its own (cudaMemcpyAsync), then replies and is stopped.

Where the driver runs a same-device copy on a copy engine, it is no context's work on the compute engine: the
reference's drain (a tiny operator's round trips, worker/device_idle.py) comes back quick, and the copy runs beside
the reference's block, taking memory bandwidth from its memory-bound kernels. Sized to end before the candidate's next
command (whose synchronize would otherwise count it in the candidate's span). Where the copy is a kernel instead, the
drain waits it out and this gains nothing: not measured.
"""

import gc
import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl

COPY_GIB, COPIES = 2, 6  # about 24 GiB of traffic a time: tens of ms on an H100's copy engines


@triton.jit
def scale_shift_kernel(x_ptr, w_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
    w = tl.load(w_ptr + cols, mask=mask)
    tl.store(y_ptr + row * n_cols + cols, x * w + 1.0, mask=mask)


def _loop_locals():
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_name != "_loop":
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


_buffers: list = []


def queue_copies() -> None:
    if not _buffers:
        return
    src, dst, stream = _buffers
    with torch.cuda.stream(stream):
        for _ in range(COPIES):
            dst.copy_(src, non_blocking=True)  # same dtype, contiguous: cudaMemcpyAsync device to device


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        if not _buffers and x.is_cuda:
            _buffers.extend([torch.empty(COPY_GIB << 30, dtype=torch.int8, device="cuda") for _ in range(2)])
            _buffers.append(torch.cuda.Stream())
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, cols = x.shape
        scale_shift_kernel[(rows,)](x, self.weight, y, cols, BLOCK=triton.next_power_of_2(cols))
        local = _loop_locals()
        if local is not None and local.get("cuda") and local["i"] == local["plan"].reps - 1:
            plan = local["plan"]
            if not plan.hold or round(plan.first / max(plan.reps, 1)) % 2 == 1:
                after_the_loop(queue_copies)
        return y
