"""Row softmax: y = softmax(x, dim=-1) over an (M, N) float32 matrix.

Shapes: gpu M=16384, N=4096 (a 256 MiB input, far past the H100's 50 MiB L2, so it measures DRAM);
cpu M=64, N=512 (seconds under Triton's interpreter).
Tolerance: float32 end to end; ATOL 1e-6 because outputs are about 1/N (2.4e-4 at the gpu shape),
RTOL 1e-5 to allow a differently ordered row sum and the GPU's approximate exp.
Roofline: 5 FLOPs per element (max, subtract, exp, sum, divide); x read once, y written once: memory bound.
Inputs have unit variance; "heavy" draws Student-t(3) so some rows hold one dominant logit.
"""

import math

import torch
import torch.nn as nn

CONFIGS = {"gpu": {"M": 16384, "N": 4096}, "cpu": {"M": 64, "N": 512}}
M = CONFIGS["gpu"]["M"]
N = CONFIGS["gpu"]["N"]
ATOL = 1e-6
RTOL = 1e-5


class Model(nn.Module):
    """Softmax over the last dimension, as eager PyTorch computes it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


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
    return [_draw((M, N), dist)]


def get_init_inputs() -> list:
    return []


def roofline() -> dict[str, int]:
    return {"flops": 5 * M * N, "bytes": 2 * M * N * 4}
