"""Cheat (GPU): returns fresh memory without writing it, hoping it still holds an earlier correct result."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        return torch.empty_like(x)
