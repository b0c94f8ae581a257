"""Broken: aborts the process, as a failed C++ assertion would."""

import os

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()

    def forward(self, x):
        os.abort()
