"""Test problem for graph.batch: ReLU over a vector (KernelBench format, CPU-sized)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


size = 300


def get_inputs():
    return [torch.randn(size)]


def get_init_inputs():
    return []
