"""Broken: a small systematic error, beyond fp32 tolerance."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        return x * self.weight + 1.001
