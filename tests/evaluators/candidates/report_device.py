"""Fails on purpose at its first call, naming the GPU it runs on (its UUID), so a test can see where it ran."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        raise RuntimeError(f"running on GPU {torch.cuda.get_device_properties(x.device).uuid}")
