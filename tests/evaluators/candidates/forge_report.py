"""Cheat: writes its own frame into the worker's result channel (fd from argv), hoping the parent trusts it."""

import os
import struct
import sys

import torch
import torch.nn as nn

os.write(int(sys.argv[1]), struct.pack(">cQ", b"B", 9) + b"not json!")


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        return x * self.weight + 1.0
