"""Broken CUDA C++ through load_inline: an undeclared name in the kernel (nvcc rejects it)."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# The launcher takes raw pointers, so this file needs no torch headers and nvcc checks it in about a second.
CUDA_SOURCE = r"""
__global__ void scale_shift_kernel(const float* x, const float* w, float* y, int rows, int cols) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) y[i] = x[i] * w[i % cols] + undeclared_shift;
}

void launch_scale_shift(const float* x, const float* w, float* y, int rows, int cols) {
    scale_shift_kernel<<<(rows * cols + 255) / 256, 256>>>(x, w, y, rows, cols);
}
"""

CPP_SOURCE = r"""
#include <torch/extension.h>
void launch_scale_shift(const float* x, const float* w, float* y, int rows, int cols);
torch::Tensor scale_shift(torch::Tensor x, torch::Tensor w) {
    auto y = torch::empty_like(x);
    launch_scale_shift(x.data_ptr<float>(), w.data_ptr<float>(), y.data_ptr<float>(), x.size(0), x.size(1));
    return y;
}
"""

module = load_inline(
    name="scale_shift_broken", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE, functions=["scale_shift"]
)


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        return module.scale_shift(x.contiguous(), self.weight)
