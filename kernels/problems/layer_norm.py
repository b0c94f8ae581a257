"""Layer norm over the last dimension: y = (x - mean) / sqrt(var + eps) * weight + bias, float32.

Inputs: x (M, N), weight (N,), bias (N,); weight and bias are inputs rather than parameters so a kernel
that ignores them fails the check. Shapes: gpu M=8192, N=8192 (256 MiB in, 256 MiB out); cpu M=64, N=384
(not a power of two, so masking is exercised).
Tolerance: float32; ATOL/RTOL 1e-5 cover a differently ordered mean and variance reduction over N.
Roofline: 7 FLOPs per element (sum, subtract, square, sum, scale by rstd, weight, bias; per-row scalars
ignored); x read once, weight and bias once, y written once: memory bound.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIGS = {"gpu": {"M": 8192, "N": 8192}, "cpu": {"M": 64, "N": 384}}
M = CONFIGS["gpu"]["M"]
N = CONFIGS["gpu"]["N"]
ATOL = 1e-5
RTOL = 1e-5


class Model(nn.Module):
    """Layer norm with elementwise affine, eps given at construction."""

    def __init__(self, eps: float = 1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (x.shape[-1],), weight, bias, self.eps)


def _draw(shape: tuple[int, ...], dist: str) -> torch.Tensor:
    """Unit-variance float32 samples from the named distribution."""
    if dist == "normal":
        return torch.randn(shape)
    if dist == "uniform":
        return (torch.rand(shape) * 2 - 1) * math.sqrt(3)
    if dist == "heavy":
        return torch.distributions.StudentT(3.0).sample(shape) / math.sqrt(3)
    raise ValueError(f"unknown input distribution {dist!r}; expected normal, uniform or heavy")


def get_inputs(dist: str = "normal") -> list[torch.Tensor]:
    # An offset mean, as activations have, so a kernel that skips the centring fails.
    x = _draw((M, N), dist) + 0.5
    return [x, 1 + 0.5 * _draw((N,), dist), 0.5 * _draw((N,), dist)]


def get_init_inputs() -> list:
    return [1e-5]


def roofline() -> dict[str, int]:
    return {"flops": 7 * M * N, "bytes": (2 * M * N + 2 * N) * 4}
