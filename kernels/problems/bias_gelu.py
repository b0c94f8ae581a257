"""Bias add then exact GELU, as after an MLP's up-projection: y = gelu(x + bias), bfloat16.

Inputs: x (M, N) bf16, bias (N,) bf16. Shapes (M x N). gpu benchmark: 8192 x 14336 (a Llama-3-8B MLP
width; 224 MiB each way), 16384 x 4096 (128 MiB), 2048 x 28672 (a Llama-3-70B MLP width), 1024 x 11008 (a
Llama-2-7B MLP width; 22 MiB, fits in L2); gpu test: 1 x 7, 8191 x 14337. cpu benchmark: 32 x 1000, 8 x 4096;
cpu test: 1 x 7, 3 x 1031. Sizes that are not multiples of a block exercise masking.
GELU is the erf form, 0.5 * v * (1 + erf(v / sqrt(2))), PyTorch's default.
Tolerance: ATOL/RTOL 1e-2: eager rounds x + bias to bf16 before the GELU, a fused kernel need not, and
bf16 has an 8-bit mantissa (relative step 0.4-0.8%), so the two may differ by a step; Triton's interpreter
truncates fp32 -> bf16 casts where a GPU rounds to nearest, one step more (the seed peaks at 0.7 of the bound).
Roofline: 6 FLOPs per element (add; scale, erf, add, multiply, halve); x read once, bias once, y written
once: memory bound.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from kernels.inputs import draw

SHAPES = {
    "gpu": {
        "benchmark": [
            {"M": 8192, "N": 14336},
            {"M": 16384, "N": 4096},
            {"M": 2048, "N": 28672},
            {"M": 1024, "N": 11008},
        ],
        "test": [{"M": 1, "N": 7}, {"M": 8191, "N": 14337}],
    },
    "cpu": {
        "benchmark": [{"M": 32, "N": 1000}, {"M": 8, "N": 4096}],
        "test": [{"M": 1, "N": 7}, {"M": 3, "N": 1031}],
    },
}
M = SHAPES["gpu"]["benchmark"][0]["M"]
N = SHAPES["gpu"]["benchmark"][0]["N"]
ATOL = 1e-2
RTOL = 1e-2


class Model(nn.Module):
    """Bias add and erf GELU in eager bf16: two kernels and one bf16 round trip between them."""

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return F.gelu(x + bias)


def get_inputs(dist: str = "normal") -> list[torch.Tensor]:
    return [draw((M, N), dist, torch.bfloat16), (0.5 * draw((N,), dist)).bfloat16()]


def get_init_inputs() -> list:
    return []


def roofline() -> dict[str, int]:
    return {"flops": 6 * M * N, "bytes": (2 * M * N + N) * 2}
