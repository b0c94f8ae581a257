"""Suspicious: a Triton kernel that silently falls back to PyTorch when it fails."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def broken_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    tl.store(y_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + tl.arange(0, BLOCK)) * undefined_name)  # noqa: F821


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        try:
            y = torch.empty_like(x)
            broken_kernel[(1,)](x, y, BLOCK=16)
            return y
        except Exception:
            return torch.addcmul(torch.ones_like(x), x, self.weight)
