"""Test problem: y = x * weight + 1 over an (M, N) float32 matrix; weight is a parameter drawn at construction."""

import torch
import torch.nn as nn

CONFIGS = {"gpu": {"M": 8192, "N": 4096}, "cpu": {"M": 8, "N": 64}}
M = CONFIGS["gpu"]["M"]
N = CONFIGS["gpu"]["N"]


class Model(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.weight + 1.0


def get_inputs(dist: str = "normal") -> list[torch.Tensor]:
    if dist == "normal":
        return [torch.randn(M, N)]
    if dist == "uniform":
        return [torch.rand(M, N) * 2 - 1]
    return [torch.distributions.StudentT(3.0).sample((M, N))]


def get_init_inputs() -> list:
    return [N]


def roofline() -> dict[str, int]:
    return {"flops": 2 * M * N, "bytes": (2 * M * N + N) * 4}
