"""Honest: writes every answer into one output buffer it keeps and returns, as a CUDA graph's static output is."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))
        self.out: torch.Tensor | None = None

    def forward(self, x):
        if self.out is None or self.out.shape != x.shape or self.out.device != x.device:
            self.out = torch.empty_like(x)
        return torch.mul(x, self.weight, out=self.out).add_(1.0)
