"""Fails on purpose at its first call, naming its process's out-of-memory score, so a test can read it."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        with open("/proc/self/oom_score_adj") as score:
            raise RuntimeError(f"oom_score_adj {score.read().strip()}")
