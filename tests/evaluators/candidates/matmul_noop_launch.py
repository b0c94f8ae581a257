"""Lazy cheat (matmul_bias_relu): PyTorch does all the work, beside one Triton launch that does nothing."""

import torch
import torch.nn as nn
import triton


@triton.jit
def nothing_kernel(y_ptr):
    pass


class ModelNew(nn.Module):
    def __init__(self, k: int, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(k, n) / k**0.5)
        self.bias = nn.Parameter(torch.randn(n))

    def forward(self, x):
        y = torch.relu(x @ self.weight + self.bias)
        nothing_kernel[(1,)](y)
        return y
