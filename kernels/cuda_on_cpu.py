"""Run code written for device='cuda' on the CPU: tensors and generators asked for on 'cuda' are made on the CPU.

GPU MODE generators allocate on 'cuda' and draw from `torch.Generator(device='cuda')`. Where nothing else in a
problem needs a GPU (see `gpumode_static.cuda_only`), mapping the device is sound: the same values are drawn from
the same seeded CPU generator every time.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch.overrides import TorchFunctionMode


def _is_cuda(device) -> bool:
    if isinstance(device, torch.device):
        return device.type == "cuda"
    return isinstance(device, str) and device.split(":")[0] == "cuda"


class _CudaToCpu(TorchFunctionMode):
    """Rewrites every 'cuda' device argument of a torch call to 'cpu'; `Tensor.cuda()` becomes a no-op."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func is torch.Tensor.cuda:
            return args[0]
        if _is_cuda(kwargs.get("device")):
            kwargs["device"] = "cpu"
        if func is torch.Tensor.to:
            args = tuple("cpu" if _is_cuda(arg) else arg for arg in args)
        return func(*args, **kwargs)


_GENERATOR = torch.Generator


class _CpuGenerator(_GENERATOR):
    """torch.Generator that ignores the device it is asked for and draws on the CPU."""

    def __new__(cls, device=None):
        return _GENERATOR.__new__(cls, "cpu")


@contextmanager
def cuda_on_cpu() -> Iterator[None]:
    """Inside, code that asks for 'cuda' tensors or generators gets CPU ones."""
    torch.Generator = _CpuGenerator
    try:
        with _CudaToCpu():
            yield
    finally:
        torch.Generator = _GENERATOR
