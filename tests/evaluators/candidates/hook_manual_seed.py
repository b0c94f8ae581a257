"""Cheat: replaces torch.random.manual_seed, which a problem's input generator may call to seed its draws.

With it, a candidate could fix the seed and know the timed inputs in advance, or do its work as they are drawn.
"""

import torch
import torch.nn as nn
import torch.random

_seed = torch.random.manual_seed


def _fixed(seed):
    return _seed(0)


torch.random.manual_seed = _fixed


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        return x * self.weight + 1.0
