"""Broken: the process kills itself (SIGKILL, as the out-of-memory killer would) at its first call on a new shape."""

import os
import signal

import torch
import torch.nn as nn

_first_shape = []


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        _first_shape[:] = _first_shape or [tuple(x.shape)]
        if tuple(x.shape) != _first_shape[0]:
            os.kill(os.getpid(), signal.SIGKILL)
        return x * self.weight + 1.0
