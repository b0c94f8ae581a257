"""Fused, one row per program, the row streamed in COLS-wide tiles twice (statistics, then output)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tiled_residual_norm_kernel(x_ptr, r_ptr, g_ptr, w_ptr, out_ptr, n_cols, stride, eps, COLS: tl.constexpr):
    row = tl.program_id(0) * stride
    # Pass 1: sum of squares, tile by tile, so no program holds a whole row in registers.
    acc = tl.zeros([COLS], dtype=tl.float32)
    for start in range(0, n_cols, COLS):
        cols = start + tl.arange(0, COLS)
        mask = cols < n_cols
        x = tl.load(x_ptr + row + cols, mask=mask, other=0.0).to(tl.float32)
        r = tl.load(r_ptr + row + cols, mask=mask, other=0.0).to(tl.float32)
        h = (x + r).to(tl.bfloat16).to(tl.float32)
        acc += h * h
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    # Pass 2: reload the tile (from L2 on a GPU) and write the gated output.
    for start in range(0, n_cols, COLS):
        cols = start + tl.arange(0, COLS)
        mask = cols < n_cols
        x = tl.load(x_ptr + row + cols, mask=mask, other=0.0).to(tl.float32)
        r = tl.load(r_ptr + row + cols, mask=mask, other=0.0).to(tl.float32)
        h = (x + r).to(tl.bfloat16).to(tl.float32)
        normed = (h * rstd).to(tl.bfloat16).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        y = (normed * w).to(tl.bfloat16).to(tl.float32)
        g = tl.load(g_ptr + row + cols, mask=mask, other=0.0).to(tl.float32)
        silu = (g / (1.0 + tl.exp(-g))).to(tl.bfloat16).to(tl.float32)
        tl.store(out_ptr + row + cols, (y * silu).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x, residual, gate, weight):
        x, residual, gate = x.contiguous(), residual.contiguous(), gate.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty_like(x)
        tiled_residual_norm_kernel[(n_rows,)](
            x, residual, gate, weight, out, n_cols, x.stride(0), self.eps, COLS=64, num_warps=2
        )
        return out
