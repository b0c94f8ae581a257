"""Control: an honest candidate that does its work slowly (20 ms per call) and launches a Triton kernel.

Each attack in attacks/ is this file with the attack appended: the two differ only in the attack.
"""

import time

import torch
import torch.nn as nn
import triton
import triton.language as tl

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


def slow_work():
    """Stands for a slow kernel: host time on the CPU, device time (a spin) on a GPU."""
    if torch.cuda.is_available():
        torch.cuda._sleep(int(WORK_S * 1.4e9))  # about 20 ms at the H100's clock
    else:
        time.sleep(WORK_S)


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        slow_work()
        return scale_shift(x, self.weight)
