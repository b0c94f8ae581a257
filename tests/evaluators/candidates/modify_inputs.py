"""Cheat: computes in place, clobbering the caller's input (and returning it)."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        return x.mul_(self.weight).add_(1.0)
