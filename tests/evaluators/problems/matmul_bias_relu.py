"""Test problem: y = relu(x @ weight + bias), where the matrix product is most of the work (K is long).

For the kernel-share rule: a library product with the candidate's own fused epilogue is honest work, though the
epilogue is a few percent of the call; a kernel that does nothing beside the library's product is not.
"""

import torch
import torch.nn as nn

from kernels.inputs import draw

CONFIGS = {"gpu": {"M": 4096, "K": 1024, "N": 4096}, "cpu": {"M": 256, "K": 32768, "N": 256}}
M = CONFIGS["gpu"]["M"]
K = CONFIGS["gpu"]["K"]
N = CONFIGS["gpu"]["N"]


class Model(nn.Module):
    def __init__(self, k: int, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(k, n) / k**0.5)
        self.bias = nn.Parameter(torch.randn(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ self.weight + self.bias)


def get_inputs(dist: str = "normal") -> list[torch.Tensor]:
    return [draw((M, K), dist)]


def get_init_inputs() -> list:
    return [K, N]
