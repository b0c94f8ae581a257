"""Seed for fp8_blockscale_gemm: a plain tiled Triton GEMM over FP8 operands, one k-block of 128 per step.

Each program owns a BLOCK_M x 128 tile of C. Per 128-wide k-block it multiplies the raw FP8 tiles with
`tl.dot` (fp32 accumulate, promoted every 32 products on Hopper), then scales that partial product by a_scale
(per row) and b_scale (one scalar, since the tile's 128 columns are one scale block) and adds it in. Rows of
A and B past m and n are masked, so any m and n work (a partial last block of n included); k is a multiple
of 128.
FP8 loads and `tl.dot` on FP8 work in Triton's interpreter (checked with Triton 3.9), so no workaround is
needed there (the interpreter ignores max_num_imprecise_acc). The tensors may be float8_e4m3fn (CUDA) or
float8_e4m3fnuz (ROCm).
Starting point only: no autotuning, no split-k, no pipelining hints, BLOCK_M fixed at 64.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fp8_blockscale_kernel(
    a_ptr, b_ptr, as_ptr, bs_ptr, c_ptr, M, N, K,
    BLOCK_M: tl.constexpr, SCALE_BLOCK: tl.constexpr,
):  # fmt: skip
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    col_block = tl.program_id(1)
    cols = col_block * SCALE_BLOCK + tl.arange(0, SCALE_BLOCK)
    row_mask = rows < M
    col_mask = cols < N
    k_blocks = K // SCALE_BLOCK
    acc = tl.zeros((BLOCK_M, SCALE_BLOCK), dtype=tl.float32)
    for kb in range(0, k_blocks):
        ks = kb * SCALE_BLOCK + tl.arange(0, SCALE_BLOCK)
        a = tl.load(a_ptr + rows[:, None] * K + ks[None, :], mask=row_mask[:, None], other=0.0)
        b = tl.load(b_ptr + cols[:, None] * K + ks[None, :], mask=col_mask[:, None], other=0.0)
        # On sm_90 FP8 products are summed in the tensor core's reduced-precision accumulator unless promoted;
        # promoting to fp32 every 32 keeps heavy-tailed inputs within tolerance on an H100 (0.6 of the bound at
        # the gpu shapes; every 128 reached 1.4x the bound at 6144 x 4608 x 7168).
        partial = tl.dot(a, tl.trans(b), max_num_imprecise_acc=32)
        a_scale = tl.load(as_ptr + rows * k_blocks + kb, mask=row_mask, other=0.0)
        b_scale = tl.load(bs_ptr + col_block * k_blocks + kb)
        acc += partial * a_scale[:, None] * b_scale
    tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc.to(tl.bfloat16), mask=row_mask[:, None] & col_mask[None, :])


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor, a_scale: torch.Tensor, b_scale: torch.Tensor) -> torch.Tensor:
        a, b = a.contiguous(), b.contiguous()
        a_scale, b_scale = a_scale.contiguous(), b_scale.contiguous()
        (m, k), n = a.shape, b.shape[0]
        c = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
        block_m = 64
        grid = (triton.cdiv(m, block_m), triton.cdiv(n, 128))
        fp8_blockscale_kernel[grid](a, b, a_scale, b_scale, c, m, n, k, BLOCK_M=block_m, SCALE_BLOCK=128)
        return c
