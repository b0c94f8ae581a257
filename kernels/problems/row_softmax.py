"""Row softmax: y = softmax(x, dim=-1) over an (M, N) float32 matrix.

Shapes (M x N). gpu benchmark: 16384 x 4096 (a 256 MiB input, far past the H100's 50 MiB L2, so it measures
DRAM), 65536 x 1024 (many short rows), 4096 x 16384 (few wide rows), 2048 x 2048 (16 MiB each way: fits in L2);
gpu test: 1 x 7, 16383 x 4097. cpu benchmark: 64 x 512, 16 x 2048; cpu test: 1 x 7, 33 x 1000
(seconds under Triton's interpreter). Odd widths leave a partial last block, so masking is exercised.
Tolerance: float32 end to end; ATOL 1e-6 because outputs are about 1/N (2.4e-4 at 16384 x 4096, 6e-5 at
N=16384), RTOL 1e-5 to allow a differently ordered row sum and the GPU's approximate exp.
Roofline: 5 FLOPs per element (max, subtract, exp, sum, divide); x read once, y written once: memory bound.
Inputs have unit variance; "heavy" draws Student-t(3) so some rows hold one dominant logit.
"""

import torch
import torch.nn as nn

from kernels.inputs import draw

SHAPES = {
    "gpu": {
        "benchmark": [
            {"M": 16384, "N": 4096},
            {"M": 65536, "N": 1024},
            {"M": 4096, "N": 16384},
            {"M": 2048, "N": 2048},
        ],
        "test": [{"M": 1, "N": 7}, {"M": 16383, "N": 4097}],
    },
    "cpu": {
        "benchmark": [{"M": 64, "N": 512}, {"M": 16, "N": 2048}],
        "test": [{"M": 1, "N": 7}, {"M": 33, "N": 1000}],
    },
}
M = SHAPES["gpu"]["benchmark"][0]["M"]
N = SHAPES["gpu"]["benchmark"][0]["N"]
ATOL = 1e-6
RTOL = 1e-5


class Model(nn.Module):
    """Softmax over the last dimension, as eager PyTorch computes it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs(dist: str = "normal") -> list[torch.Tensor]:
    return [draw((M, N), dist)]


def get_init_inputs() -> list:
    return []


def roofline() -> dict[str, int]:
    return {"flops": 5 * M * N, "bytes": 2 * M * N * 4}
