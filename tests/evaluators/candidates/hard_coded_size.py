"""Overfit: right only at the sizes it was written for (N = 64), as agents that see one shape write."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        return (x.reshape(-1, 64) * self.weight[:64]).reshape(x.shape) + 1.0
