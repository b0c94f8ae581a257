"""Honest (matmul_bias_relu): the library's matrix product, then its own Triton epilogue adds bias and ReLU."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_relu_kernel(y_ptr, b_ptr, m, n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < m) & (cols < n)
    y = tl.load(y_ptr + rows * n + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=cols < n)
    tl.store(y_ptr + rows * n + cols, tl.maximum(y + b, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, k: int, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(k, n) / k**0.5)
        self.bias = nn.Parameter(torch.randn(n))

    def forward(self, x):
        y = x @ self.weight
        m, n = y.shape
        grid = (triton.cdiv(m, 32), triton.cdiv(n, 128))
        bias_relu_kernel[grid](y, self.bias, m, n, BLOCK_M=32, BLOCK_N=128)
        return y
