"""CUDA C++ through load_inline: compiles with nvcc, runs only on a GPU."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>

__global__ void scale_shift_kernel(const float* x, const float* w, float* y, int rows, int cols) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) y[i] = x[i] * w[i % cols] + 1.0f;
}

torch::Tensor scale_shift(torch::Tensor x, torch::Tensor w) {
    auto y = torch::empty_like(x);
    int rows = x.size(0), cols = x.size(1);
    int threads = 256, blocks = (rows * cols + threads - 1) / threads;
    scale_shift_kernel<<<blocks, threads>>>(x.data_ptr<float>(), w.data_ptr<float>(), y.data_ptr<float>(), rows, cols);
    return y;
}
"""

module = load_inline(
    name="scale_shift",
    cpp_sources="torch::Tensor scale_shift(torch::Tensor x, torch::Tensor w);",
    cuda_sources=CUDA_SOURCE,
    functions=["scale_shift"],
)


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        return module.scale_shift(x.contiguous(), self.weight)
