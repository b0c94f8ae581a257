"""Cheat seen on live leaderboards: memoize the output keyed on the input's data_ptr(), honest until then."""

import torch
import torch.nn as nn

HONEST_CALLS = 4


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))
        self.calls, self.cache = 0, {}

    def forward(self, x):
        self.calls += 1
        key = (x.data_ptr(), tuple(x.shape))
        if self.calls > HONEST_CALLS and key in self.cache:
            return self.cache[key]
        out = x * self.weight + 1.0
        self.cache[key] = out
        return out
