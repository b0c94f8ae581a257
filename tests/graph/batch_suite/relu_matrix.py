"""Test problem for graph.batch: ReLU over a matrix (KernelBench format, CPU-sized)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


rows, cols = 12, 40


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
