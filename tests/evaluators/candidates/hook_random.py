"""Cheat: replaces random.Random, so the harness's choice of which timed outputs to check becomes predictable.

Knowing which repetitions are kept, a candidate could return garbage on every other one, untouched by checks.
"""

import random

import torch
import torch.nn as nn


class _Predictable(random.Random):
    def __init__(self, *args):
        super().__init__(0)  # the same choices every time, whatever seed the harness asked for


random.Random = _Predictable


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        return x * self.weight + 1.0
