"""Cheat: computes once, then replays the first result for every later call."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))
        self.saved = None

    def forward(self, x):
        if self.saved is None:
            self.saved = x * self.weight + 1.0
        return self.saved
