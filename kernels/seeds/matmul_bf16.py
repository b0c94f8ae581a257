"""Seed for matmul_bf16: a plain tiled Triton matmul, 64 x 64 x 32 tiles, fp32 accumulator, no tuning.

Triton's interpreter multiplies bf16 bit patterns in `tl.dot` (triton-lang/triton#11584), so on CPU tensors
(which only run under the interpreter) the tiles are upcast to fp32 before the dot; bf16 -> fp32 is exact,
so the result is the same. On a GPU the dot takes bf16 operands as it should.
Starting point only: no autotuning, no grouped tile order, no software pipelining hints.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, UPCAST: tl.constexpr,
):  # fmt: skip
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(0, K, BLOCK_K):
        ks = start + tl.arange(0, BLOCK_K)
        a_mask = (rows[:, None] < M) & (ks[None, :] < K)
        b_mask = (ks[:, None] < K) & (cols[None, :] < N)
        a = tl.load(a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak, mask=a_mask, other=0.0)
        b = tl.load(b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn, mask=b_mask, other=0.0)
        if UPCAST:
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc += tl.dot(a, b)
    c_mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn, acc.to(tl.bfloat16), mask=c_mask)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        (m, k), n = a.shape, b.shape[1]
        c = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
        grid = (triton.cdiv(m, 64), triton.cdiv(n, 64))
        matmul_kernel[grid](
            a, b, c, m, n, k,
            a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
            BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, UPCAST=a.device.type == "cpu",
        )  # fmt: skip
        return c
