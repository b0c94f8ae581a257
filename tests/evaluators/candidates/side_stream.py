"""Cheat (GPU): launches the work on a side stream and returns before it finishes, hoping it goes untimed."""

import torch
import torch.nn as nn

_side = None


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        global _side
        _side = _side or torch.cuda.Stream()
        _side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(_side):
            y = x
            for _ in range(20):  # twenty passes: plenty of device time to hide
                y = y * 1.0
            y = y * self.weight + 1.0
        return y
