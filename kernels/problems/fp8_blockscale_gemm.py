"""FP8 block-scaled GEMM, the AMD MI300 (GPU MODE) competition's problem: C = (A * sa) @ (B * sb)^T in bf16.

Inputs: A (m, k) and B (n, k) in FP8 e4m3 (float8_e4m3fnuz on ROCm, as MI300 uses; float8_e4m3fn on CUDA),
a_scale (m, k/128) fp32, one scale per row and 128-wide block of k, and b_scale (n/128, k/128) fp32, one
scale per 128 x 128 block of B. C (m, n) is bf16. The reference dequantizes into fp32 and multiplies in fp32.
Shapes: gpu m=1024, n=1536, k=7168 (a competition shape); cpu m=48, n=256, k=384 (m not a tile multiple).
n and k must be multiples of 128, and all tensors are row-major (the competition passed A, B and the
scales column-major and allowed a partial last block of n). Scales are positive (uniform in [0.5, 1.5]);
b_scale also carries 1/sqrt(k) so C has about unit variance.
Tolerance: ATOL 1e-3 (a thousandth of C's spread), RTOL 2e-2 (five bf16 steps): C is rounded to bf16, and
Hopper sums FP8 products in a reduced-precision accumulator between promotions to fp32, which heavy-tailed
inputs expose. (The competition used RTOL 1e-2, ATOL 5e-4 on a C of spread ~85: unit-normal scales, no 1/sqrt(k).)
Roofline: 2*m*n*k FLOPs for the matrix-core work (the 3*m*n*k/128 scale FLOPs, 1.2%, are left out);
A and B one byte per element, both scales fp32, C bf16, each moved once.
"""

import math

import torch
import torch.nn as nn

CONFIGS = {"gpu": {"m": 1024, "n": 1536, "k": 7168}, "cpu": {"m": 48, "n": 256, "k": 384}}
m = CONFIGS["gpu"]["m"]
n = CONFIGS["gpu"]["n"]
k = CONFIGS["gpu"]["k"]
BLOCK = 128
ATOL = 1e-3
RTOL = 2e-2
FP8 = torch.float8_e4m3fnuz if torch.version.hip else torch.float8_e4m3fn


class Model(nn.Module):
    """Dequantize A and B block by block into fp32, multiply in fp32, round C to bf16."""

    def forward(self, a: torch.Tensor, b: torch.Tensor, a_scale: torch.Tensor, b_scale: torch.Tensor) -> torch.Tensor:
        a_full = a.float() * a_scale.repeat_interleave(BLOCK, dim=1)
        b_full = b.float() * b_scale.repeat_interleave(BLOCK, dim=0).repeat_interleave(BLOCK, dim=1)
        return (a_full @ b_full.T).to(torch.bfloat16)


def _draw(shape: tuple[int, ...], dist: str) -> torch.Tensor:
    """Unit-variance float32 samples from the named distribution."""
    if dist == "normal":
        return torch.randn(shape)
    if dist == "uniform":
        return (torch.rand(shape) * 2 - 1) * math.sqrt(3)
    if dist == "heavy":
        return torch.distributions.StudentT(3.0).sample(shape) / math.sqrt(3)
    raise ValueError(f"unknown input distribution {dist!r}; expected normal, uniform or heavy")


def _to_fp8(values: torch.Tensor) -> torch.Tensor:
    # Clamp first: heavy tails can pass fnuz's 240, and an out-of-range cast gives NaN, not the largest value.
    largest = torch.finfo(FP8).max
    return values.clamp(-largest, largest).to(FP8)


def get_inputs(dist: str = "normal") -> list[torch.Tensor]:
    if n % BLOCK or k % BLOCK:
        raise ValueError(f"n={n} and k={k} must be multiples of {BLOCK}")
    a = _to_fp8(_draw((m, k), dist))
    b = _to_fp8(_draw((n, k), dist))
    a_scale = 0.5 + torch.rand(m, k // BLOCK)
    b_scale = (0.5 + torch.rand(n // BLOCK, k // BLOCK)) / math.sqrt(k)
    return [a, b, a_scale, b_scale]


def get_init_inputs() -> list:
    return []


def roofline() -> dict[str, int]:
    scale_bytes = (m * (k // BLOCK) + (n // BLOCK) * (k // BLOCK)) * 4
    return {"flops": 2 * m * n * k, "bytes": m * k + n * k + scale_bytes + 2 * m * n}
