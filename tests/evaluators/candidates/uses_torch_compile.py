"""Honest: torch.compile on the forward (importing dynamo rebinds torch.manual_seed, which is not tampering)."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))
        self.fused = torch.compile(lambda x, w: x * w + 1.0)

    def forward(self, x):
        return self.fused(x, self.weight)
