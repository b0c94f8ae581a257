"""Control: an honest candidate that does its work slowly (20 ms per call), all of it in Triton kernels of its own.

Each attack in attacks/ is this file with the attack appended: the two differ only in the attack.
"""

import time

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra.cuda import globaltimer

WORK_S = 0.02


@triton.jit
def _scale_shift(x_ptr, w_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
    w = tl.load(w_ptr + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, x * w + 1.0, mask=mask)


def scale_shift(x, weight):
    out = torch.empty_like(x)
    _scale_shift[(x.shape[0],)](x, weight, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    return out


@triton.jit
def _spin(flag_ptr, ns):
    # A kernel of the candidate's own that runs for `ns` nanoseconds of the device's clock: the control's slow work
    # must be its own kernels' time, or the device-time share would rightly call it no custom kernel.
    start = globaltimer()
    while globaltimer() - start < ns:
        pass
    tl.store(flag_ptr, 1)


def slow_work():
    """Stands for a slow kernel: host time on the CPU, device time (a spin of its own kernel) on a GPU."""
    if torch.cuda.is_available():
        _spin[(1,)](torch.empty(1, dtype=torch.int32, device="cuda"), int(WORK_S * 1e9))
    else:
        time.sleep(WORK_S)


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        slow_work()
        return scale_shift(x, self.weight)
