"""Layer norm over the last dimension: y = (x - mean) / sqrt(var + eps) * weight + bias, float32.

Inputs: x (M, N), weight (N,), bias (N,); weight and bias are inputs rather than parameters so a kernel
that ignores them fails the check. Shapes (M x N). gpu benchmark: 8192 x 8192 (256 MiB in, 256 MiB out),
32768 x 1024 (many narrow rows, BERT-large's width), 4096 x 12288 (GPT-3's width), 2048 x 2048 (16 MiB each
way: fits in L2); gpu test: 1 x 7, 10007 x 8193. cpu benchmark: 64 x 384, 16 x 2048; cpu test: 1 x 7, 37 x 1000.
Widths that are not powers of two leave partial blocks, so masking is exercised.
Tolerance: float32; ATOL/RTOL 1e-5 cover a differently ordered mean and variance reduction over N.
Roofline: 7 FLOPs per element (sum, subtract, square, sum, scale by rstd, weight, bias; per-row scalars
ignored); x read once, weight and bias once, y written once: memory bound.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from kernels.inputs import draw

SHAPES = {
    "gpu": {
        "benchmark": [
            {"M": 8192, "N": 8192},
            {"M": 32768, "N": 1024},
            {"M": 4096, "N": 12288},
            {"M": 2048, "N": 2048},
        ],
        "test": [{"M": 1, "N": 7}, {"M": 10007, "N": 8193}],
    },
    "cpu": {
        "benchmark": [{"M": 64, "N": 384}, {"M": 16, "N": 2048}],
        "test": [{"M": 1, "N": 7}, {"M": 37, "N": 1000}],
    },
}
M = SHAPES["gpu"]["benchmark"][0]["M"]
N = SHAPES["gpu"]["benchmark"][0]["N"]
ATOL = 1e-5
RTOL = 1e-5


class Model(nn.Module):
    """Layer norm with elementwise affine, eps given at construction."""

    def __init__(self, eps: float = 1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (x.shape[-1],), weight, bias, self.eps)


def get_inputs(dist: str = "normal") -> list[torch.Tensor]:
    # An offset mean, as activations have, so a kernel that skips the centring fails.
    x = draw((M, N), dist) + 0.5
    return [x, 1 + 0.5 * draw((N,), dist), 0.5 * draw((N,), dist)]


def get_init_inputs() -> list:
    return [1e-5]


def roofline() -> dict[str, int]:
    return {"flops": 7 * M * N, "bytes": (2 * M * N + 2 * N) * 4}
