"""Honest: imports torch's extension builder itself, and fails to import unless the worker wrapped it first.

The worker imports the builder only once a candidate does; its load_inline must still be counted (worker/evidence.py)
around the one that names builds by content (worker/buildshim.py).
"""

import torch
import torch.nn as nn
from torch.utils import cpp_extension

_counted = getattr(cpp_extension.load_inline, "__wrapped__", None)
if "_wrap.<locals>.load_inline" not in getattr(_counted, "__qualname__", ""):
    raise ImportError(f"torch's load_inline is not the worker's: {cpp_extension.load_inline!r}")


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        return x * self.weight + 1.0
