"""Broken: prints about 120 MB, then fails."""

import sys

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()

    def forward(self, x):
        line = "spam " * 200 + "\n"
        for _ in range(120_000):
            sys.stdout.write(line)
        raise RuntimeError("done flooding")
