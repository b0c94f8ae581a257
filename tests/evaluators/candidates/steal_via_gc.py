"""Cheat: looks for the reference's result among live objects instead of computing it."""

import gc

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        for obj in gc.get_objects():
            if isinstance(obj, torch.Tensor) and obj is not x and obj.shape == x.shape and obj.dtype == x.dtype:
                if not torch.equal(obj, x):
                    return obj.clone()
        return torch.zeros_like(x)
