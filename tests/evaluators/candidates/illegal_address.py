"""Broken (GPU): a Triton kernel that reads far outside its input, a CUDA illegal-address fault."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def out_of_bounds_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets + (1 << 40)))


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        y = torch.empty_like(x)
        out_of_bounds_kernel[(1,)](x, y, BLOCK=128)
        return y
