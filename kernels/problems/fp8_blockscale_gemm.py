"""FP8 block-scaled GEMM, the AMD MI300 (GPU MODE) competition's problem: C = (A * sa) @ (B * sb)^T in bf16.

Inputs: A (m, k) and B (n, k) in FP8 e4m3 (float8_e4m3fnuz on ROCm, as MI300 uses; float8_e4m3fn on CUDA),
a_scale (m, k/128) fp32, one scale per row and 128-wide block of k, and b_scale (ceil(n/128), k/128) fp32, one
scale per 128 x 128 block of B; when n is not a multiple of 128 the last block of B's rows is partial and
uses the last row of b_scale. C (m, n) is bf16. The reference dequantizes into fp32 and multiplies in fp32.
Shapes (m x n x k), all from the competition's published lists (gpu-mode/reference-kernels,
problems/amd/fp8-mm/task.yml). gpu benchmark, from its `benchmarks`: 1024 x 1536 x 7168, 1024 x 576 x 7168
(n a partial block), 1024 x 7168 x 256, 6144 x 4608 x 7168; gpu test, from its `tests`: 64 x 64 x 128 (one
partial block of n), 96 x 7168 x 256 (m not a multiple of 64). cpu benchmark: 48 x 256 x 384 (m not a tile
multiple), 32 x 320 x 256 (n a partial block); cpu test: 7 x 200 x 128, 1 x 64 x 128.
k must be a multiple of 128; m and n may be anything. All tensors are row-major (the competition passed A, B
and the scales column-major). Scales are positive (uniform in [0.5, 1.5]); b_scale also carries 1/sqrt(k) so
C has about unit variance.
Tolerance: ATOL 3e-3 (three thousandths of C's spread), RTOL 2e-2 (five bf16 steps): C is rounded to bf16,
and Hopper sums FP8 products in a reduced-precision accumulator between promotions to fp32, which heavy-tailed
inputs expose near C = 0: on an H100 the seed, promoting every 32 products, needed an ATOL of up to 1.5e-3 on
heavy draws at the gpu shapes (2e-4 on normal and uniform ones). (The competition's check, in
problems/amd/fp8-mm/reference.py, used RTOL 2e-2 and ATOL 1e-3 on a C of spread ~85: unit-normal scales, no
1/sqrt(k), so its ATOL was far tighter relative to C.)
Roofline: 2*m*n*k FLOPs for the matrix-core work (the 3*m*n*k/128 scale FLOPs, 1.2%, are left out);
A and B one byte per element, both scales fp32, C bf16, each moved once.
"""

import math

import torch
import torch.nn as nn

from kernels.inputs import draw

SHAPES = {
    "gpu": {
        "benchmark": [
            {"m": 1024, "n": 1536, "k": 7168},
            {"m": 1024, "n": 576, "k": 7168},
            {"m": 1024, "n": 7168, "k": 256},
            {"m": 6144, "n": 4608, "k": 7168},
        ],
        "test": [{"m": 64, "n": 64, "k": 128}, {"m": 96, "n": 7168, "k": 256}],
    },
    "cpu": {
        "benchmark": [{"m": 48, "n": 256, "k": 384}, {"m": 32, "n": 320, "k": 256}],
        "test": [{"m": 7, "n": 200, "k": 128}, {"m": 1, "n": 64, "k": 128}],
    },
}
m = SHAPES["gpu"]["benchmark"][0]["m"]
n = SHAPES["gpu"]["benchmark"][0]["n"]
k = SHAPES["gpu"]["benchmark"][0]["k"]
BLOCK = 128
ATOL = 3e-3
RTOL = 2e-2
FP8 = torch.float8_e4m3fnuz if torch.version.hip else torch.float8_e4m3fn


class Model(nn.Module):
    """Dequantize A and B block by block into fp32, multiply in fp32, round C to bf16."""

    def forward(self, a: torch.Tensor, b: torch.Tensor, a_scale: torch.Tensor, b_scale: torch.Tensor) -> torch.Tensor:
        a_full = a.float() * a_scale.repeat_interleave(BLOCK, dim=1)
        # A partial last block of B's rows: expand whole blocks, then drop the rows past n.
        b_rows = b_scale.repeat_interleave(BLOCK, dim=0)[: b.shape[0]]
        b_full = b.float() * b_rows.repeat_interleave(BLOCK, dim=1)
        return (a_full @ b_full.T).to(torch.bfloat16)


def _to_fp8(values: torch.Tensor) -> torch.Tensor:
    # Clamp first: heavy tails can pass fnuz's 240, and an out-of-range cast gives NaN, not the largest value.
    largest = torch.finfo(FP8).max
    return values.clamp(-largest, largest).to(FP8)


def get_inputs(dist: str = "normal") -> list[torch.Tensor]:
    if k % BLOCK:
        raise ValueError(f"k={k} must be a multiple of {BLOCK}")
    a = _to_fp8(draw((m, k), dist))
    b = _to_fp8(draw((n, k), dist))
    a_scale = 0.5 + torch.rand(m, k // BLOCK)
    b_scale = (0.5 + torch.rand(math.ceil(n / BLOCK), k // BLOCK)) / math.sqrt(k)
    return [a, b, a_scale, b_scale]


def get_init_inputs() -> list:
    return []


def roofline() -> dict[str, int]:
    scale_bytes = (m * (k // BLOCK) + math.ceil(n / BLOCK) * (k // BLOCK)) * 4
    return {"flops": 2 * m * n * k, "bytes": m * k + n * k + scale_bytes + 2 * m * n}
