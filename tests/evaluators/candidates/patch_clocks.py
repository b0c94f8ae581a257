"""Cheat: correct but slow (sleeps), and makes the library clocks report almost no elapsed time."""

import time

import torch
import torch.nn as nn

_real_sleep = time.sleep
time.perf_counter = lambda: 0.0
time.time = lambda: 0.0
time.monotonic = lambda: 0.0
torch.cuda.Event.elapsed_time = lambda self, end: 1e-6


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        _real_sleep(0.05)
        return x * self.weight + 1.0
