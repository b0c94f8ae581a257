"""Dense matrix multiply in bfloat16: C = A @ B, A (M, K), B (K, N), C (M, N), fp32 accumulation.

Shapes: gpu M=N=K=8192 (1.1 TFLOP, compute bound on an H100); cpu M=64, N=96, K=160 (not multiples of
the usual 32/64 tiles, so edge masking is exercised).
B is scaled by 1/sqrt(K), as a linear layer's weights are, so C has about unit variance at every K.
Tolerance: ATOL/RTOL 2e-2: C is rounded to bf16 (relative step 0.4%), and cuBLAS may reduce split-K
partial sums in bf16 (PyTorch's allow_bf16_reduced_precision_reduction defaults to True), so the
reference itself carries about a bf16 step of error near |C| ~ 1.
Roofline: 2*M*N*K FLOPs; A and B read once, C written once.
"""

import math

import torch
import torch.nn as nn

CONFIGS = {"gpu": {"M": 8192, "N": 8192, "K": 8192}, "cpu": {"M": 64, "N": 96, "K": 160}}
M = CONFIGS["gpu"]["M"]
N = CONFIGS["gpu"]["N"]
K = CONFIGS["gpu"]["K"]
ATOL = 2e-2
RTOL = 2e-2


class Model(nn.Module):
    """torch.matmul on bf16 operands (cuBLAS on a GPU)."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


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
    return [_draw((M, K), dist).bfloat16(), (_draw((K, N), dist) / math.sqrt(K)).bfloat16()]


def get_init_inputs() -> list:
    return []


def roofline() -> dict[str, int]:
    return {"flops": 2 * M * N * K, "bytes": (M * K + K * N + M * N) * 2}
