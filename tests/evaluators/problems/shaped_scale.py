"""Test problem with several shapes: y = x * weight + 1, benchmark shapes timed, test shapes only checked."""

import torch
import torch.nn as nn

from kernels.inputs import draw

SHAPES = {
    "gpu": {"benchmark": [{"M": 4096, "N": 4096}, {"M": 1024, "N": 8192}], "test": [{"M": 3, "N": 1000}]},
    "cpu": {"benchmark": [{"M": 8, "N": 64}, {"M": 16, "N": 32}], "test": [{"M": 3, "N": 7}]},
}
M, N = 4096, 4096


class Model(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.weight + 1.0


def get_inputs(dist: str = "normal") -> list[torch.Tensor]:
    return [draw((M, N), dist)]


def get_init_inputs() -> list:
    return [N]
