"""Bias add then exact GELU, as after an MLP's up-projection: y = gelu(x + bias), bfloat16.

Inputs: x (M, N) bf16, bias (N,) bf16. Shapes: gpu M=8192, N=14336 (a Llama-3-8B MLP width; 224 MiB each
way); cpu M=32, N=1000 (not a multiple of any block size, so masking is exercised).
GELU is the erf form, 0.5 * v * (1 + erf(v / sqrt(2))), PyTorch's default.
Tolerance: ATOL/RTOL 1e-2: eager rounds x + bias to bf16 before the GELU, a fused kernel need not, and
bf16 has an 8-bit mantissa (relative step 0.4-0.8%), so the two may differ by a step; Triton's interpreter
truncates fp32 -> bf16 casts where a GPU rounds to nearest, one step more (the seed peaks at 0.7 of the bound).
Roofline: 6 FLOPs per element (add; scale, erf, add, multiply, halve); x read once, bias once, y written
once: memory bound.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIGS = {"gpu": {"M": 8192, "N": 14336}, "cpu": {"M": 32, "N": 1000}}
M = CONFIGS["gpu"]["M"]
N = CONFIGS["gpu"]["N"]
ATOL = 1e-2
RTOL = 1e-2


class Model(nn.Module):
    """Bias add and erf GELU in eager bf16: two kernels and one bf16 round trip between them."""

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return F.gelu(x + bias)


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
    return [_draw((M, N), dist).bfloat16(), (0.5 * _draw((N,), dist)).bfloat16()]


def get_init_inputs() -> list:
    return []


def roofline() -> dict[str, int]:
    return {"flops": 6 * M * N, "bytes": (2 * M * N + N) * 2}
