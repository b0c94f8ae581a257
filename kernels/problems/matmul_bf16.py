"""Dense matrix multiply in bfloat16: C = A @ B, A (M, K), B (K, N), C (M, N), fp32 accumulation.

Shapes (M x N x K). gpu benchmark: 8192 x 8192 x 8192 (1.1 TFLOP, compute bound on an H100), 4096 x 14336 x
4096 and 8192 x 4096 x 14336 (a Llama-3-8B MLP's up and down projections over 4k and 8k tokens), 256 x 8192 x
8192 (few rows: reading B takes about as long as the FLOPs); gpu test: 1 x 7 x 13, 4095 x 4097 x 1023. cpu
benchmark: 64 x 96 x 160, 32 x 200 x 64; cpu test: 1 x 7 x 13, 5 x 33 x 70. Sizes off the usual 32/64 tiles
exercise edge masking.
B is scaled by 1/sqrt(K), as a linear layer's weights are, so C has about unit variance at every K.
Tolerance: ATOL/RTOL 2e-2: C is rounded to bf16 (relative step 0.4%), and cuBLAS may reduce split-K
partial sums in bf16 (PyTorch's allow_bf16_reduced_precision_reduction defaults to True), so the
reference itself carries about a bf16 step of error near |C| ~ 1.
Roofline: 2*M*N*K FLOPs; A and B read once, C written once.
"""

import math

import torch
import torch.nn as nn

from kernels.inputs import draw

SHAPES = {
    "gpu": {
        "benchmark": [
            {"M": 8192, "N": 8192, "K": 8192},
            {"M": 4096, "N": 14336, "K": 4096},
            {"M": 8192, "N": 4096, "K": 14336},
            {"M": 256, "N": 8192, "K": 8192},
        ],
        "test": [{"M": 1, "N": 7, "K": 13}, {"M": 4095, "N": 4097, "K": 1023}],
    },
    "cpu": {
        "benchmark": [{"M": 64, "N": 96, "K": 160}, {"M": 32, "N": 200, "K": 64}],
        "test": [{"M": 1, "N": 7, "K": 13}, {"M": 5, "N": 33, "K": 70}],
    },
}
M = SHAPES["gpu"]["benchmark"][0]["M"]
N = SHAPES["gpu"]["benchmark"][0]["N"]
K = SHAPES["gpu"]["benchmark"][0]["K"]
ATOL = 2e-2
RTOL = 2e-2


class Model(nn.Module):
    """torch.matmul on bf16 operands (cuBLAS on a GPU)."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


def get_inputs(dist: str = "normal") -> list[torch.Tensor]:
    return [draw((M, K), dist, torch.bfloat16), (draw((K, N), dist) / math.sqrt(K)).bfloat16()]


def get_init_inputs() -> list:
    return []


def roofline() -> dict[str, int]:
    return {"flops": 2 * M * N * K, "bytes": (M * K + K * N + M * N) * 2}
