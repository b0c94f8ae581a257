"""Cheat: a TorchDispatchMode left active finishes deferred work whenever the harness copies an output."""

import torch
import torch.nn as nn
from torch.utils._python_dispatch import TorchDispatchMode

_pending = {}


class _FinishOnCopy(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        finishing = func is not torch.ops.aten.copy_.default
        for arg in args:
            if finishing and isinstance(arg, torch.Tensor) and arg.data_ptr() in _pending:
                x, weight = _pending.pop(arg.data_ptr())
                with torch.no_grad():
                    arg.copy_(x * weight + 1.0)
        return func(*args, **(kwargs or {}))


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))
        self.mode = None

    def forward(self, x):
        if self.mode is None:
            self.mode = _FinishOnCopy()
            self.mode.__enter__()  # never left: every op after this call goes through the mode
        out = torch.full_like(x, float("nan"))
        _pending[out.data_ptr()] = (x, self.weight)
        return out
