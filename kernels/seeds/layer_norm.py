"""Seed for layer_norm: one Triton program per row, looping over the row in blocks three times.

Passes: mean, then variance, then normalise and apply weight and bias. Starting point only: the row is
read three times and each program handles a single row.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layer_norm_row_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, row_stride, eps, BLOCK: tl.constexpr):
    row_start = tl.program_id(0) * row_stride
    total = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        total += tl.load(x_ptr + row_start + cols, mask=cols < n_cols, other=0.0)
    mean = tl.sum(total, axis=0) / n_cols
    squares = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row_start + cols, mask=cols < n_cols, other=0.0)
        centred = tl.where(cols < n_cols, x - mean, 0.0)
        squares += centred * centred
    rstd = 1.0 / tl.sqrt(tl.sum(squares, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row_start + cols, mask=mask, other=0.0)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0)
        tl.store(y_ptr + row_start + cols, (x - mean) * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, eps: float = 1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n_rows, n_cols = x.shape
        block = min(1024, triton.next_power_of_2(n_cols))
        layer_norm_row_kernel[(n_rows,)](x, weight, bias, y, n_cols, x.stride(0), self.eps, BLOCK=block)
        return y
