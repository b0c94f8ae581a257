"""Seed for bias_gelu: one flat elementwise Triton kernel, bias add and erf GELU computed in fp32.

Starting point only: a fixed 1024-element block, a modulo per element to find the bias column.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_gelu_kernel(x_ptr, bias_ptr, y_ptr, n_elements, n_cols, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    bias = tl.load(bias_ptr + offsets % n_cols, mask=mask, other=0.0).to(tl.float32)
    v = x + bias
    y = 0.5 * v * (1.0 + tl.math.erf(v * 0.7071067811865476))
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        block = 1024
        bias_gelu_kernel[(triton.cdiv(x.numel(), block),)](x, bias, y, x.numel(), x.shape[-1], BLOCK=block)
        return y
