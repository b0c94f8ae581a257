"""Honest: a busy-wait of SPIN_MS on the device (standing for a kernel's own extra work), then the one-program-a-row
Triton pass, both on the timed stream, in order. Its issue (two launches, one through Triton's launcher) takes the
host longer than the reference's two aten launches, which the parent's clock counts and its timer does not: on an H200
its timer was disputed in 8 of 14 evaluations, its figure then the parent's (docs/BENCHMARKS.md, "How far an honest
timer sits below the parent's clock")."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

SPIN_MS = 0.1
_cycles_per_ms: list[float] = []


@triton.jit
def scale_shift_kernel(x_ptr, w_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
    w = tl.load(w_ptr + cols, mask=mask)
    tl.store(y_ptr + row * n_cols + cols, x * w + 1.0, mask=mask)


def spin(ms: float) -> None:
    if not _cycles_per_ms:  # calibrated once, at the first call (a warm-up's)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(1_000_000)
        end.record()
        end.synchronize()
        _cycles_per_ms.append(1_000_000 / max(start.elapsed_time(end), 1e-3))
    torch.cuda._sleep(int(ms * _cycles_per_ms[0]))


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        if x.is_cuda:
            spin(SPIN_MS)
        rows, cols = x.shape
        scale_shift_kernel[(rows,)](x, self.weight, y, cols, BLOCK=triton.next_power_of_2(cols))
        return y
