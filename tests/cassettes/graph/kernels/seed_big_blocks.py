"""The seed's three kernels with 4096-element blocks for the two elementwise stages."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def residual_add_kernel(x_ptr, r_ptr, h_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(h_ptr + offsets, (x + r).to(h_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rms_norm_row_kernel(h_ptr, w_ptr, y_ptr, n_cols, row_stride, eps, BLOCK: tl.constexpr):
    row_start = tl.program_id(0) * row_stride
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    h = tl.load(h_ptr + row_start + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=0) / n_cols + eps)
    # Round the normalised row to bf16 before the weight, as the reference does; the fp32 product of two
    # bf16 values is exact, so one rounding at the store matches a bf16 multiply.
    normed = (h * rstd).to(y_ptr.dtype.element_ty).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row_start + cols, (normed * w).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def silu_gate_kernel(y_ptr, g_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    g = tl.load(g_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, (y * g / (1.0 + tl.exp(-g))).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(
        self, x: torch.Tensor, residual: torch.Tensor, gate: torch.Tensor, weight: torch.Tensor
    ) -> torch.Tensor:
        x, residual, gate = x.contiguous(), residual.contiguous(), gate.contiguous()
        n_rows, n_cols = x.shape
        # Larger blocks: fewer programs, each streaming more bytes.
        block = 4096
        flat_grid = (triton.cdiv(x.numel(), block),)
        h = torch.empty_like(x)
        residual_add_kernel[flat_grid](x, residual, h, x.numel(), BLOCK=block)
        y = torch.empty_like(x)
        row_block = triton.next_power_of_2(n_cols)
        rms_norm_row_kernel[(n_rows,)](h, weight, y, n_cols, h.stride(0), self.eps, BLOCK=row_block)
        out = torch.empty_like(x)
        silu_gate_kernel[flat_grid](y, gate, out, x.numel(), BLOCK=block)
        return out
