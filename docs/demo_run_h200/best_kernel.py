"""Fused pass with SiLU through exp2, scaled by log2(e)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fused_residual_norm_kernel(
    x_ptr, r_ptr, g_ptr, w_ptr, out_ptr, n_rows, n_cols, stride, eps, ROWS: tl.constexpr, BLOCK_H: tl.constexpr
):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]
    cols = tl.arange(0, BLOCK_H)[None, :]
    mask = (rows < n_rows) & (cols < n_cols)
    offsets = rows * stride + cols
    # The reference rounds x + residual to bf16 before normalising; do the same so the statistics agree.
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    h = (x + r).to(tl.bfloat16).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=1) / n_cols + eps)
    normed = (h * rstd[:, None]).to(tl.bfloat16).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    y = (normed * w).to(tl.bfloat16).to(tl.float32)
    g = tl.load(g_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    # exp(-g) = exp2(-g * log2(e)): one special-function instruction, the multiply folded into it.
    silu = (g / (1.0 + tl.exp2(-g * 1.4426950408889634))).to(tl.bfloat16).to(tl.float32)
    tl.store(out_ptr + offsets, (y * silu).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x, residual, gate, weight):
        x, residual, gate = x.contiguous(), residual.contiguous(), gate.contiguous()
        n_rows, n_cols = x.shape
        block_h = triton.next_power_of_2(n_cols)
        # A problem that fits in one 16K-element tile is launch bound: one program does it all. Otherwise one
        # row per program gives the GPU thousands of programs to spread over its SMs.
        rows = triton.next_power_of_2(n_rows) if n_rows * block_h <= 16384 else 1
        out = torch.empty_like(x)
        grid = (triton.cdiv(n_rows, rows),)
        fused_residual_norm_kernel[grid](
            x,
            residual,
            gate,
            weight,
            out,
            n_rows,
            n_cols,
            x.stride(0),
            self.eps,
            ROWS=rows,
            BLOCK_H=block_h,
            num_warps=8,
        )
        return out
