"""A kernel of the harness's own, from a PTX file beside it, loaded and launched through the CUDA driver (ctypes).

The harness's kernels come from this repository, never from a compile cache a candidate's user can write to: the
reference runs them too. Loading a PTX file once took about 15 ms on an H100 (the driver's compile), so each kernel
is loaded once per process, while the worker starts (worker/kernel_warmup.py).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from pathlib import Path

import torch

P = ctypes.c_void_p


class Kernel:
    """A loaded kernel: `launch(grid, block, pointers(args), stream)` queues it, `args` being ctypes values it reads."""

    def __init__(self, driver, function: ctypes.c_void_p):
        self.driver, self.function = driver, function

    def launch(self, grid: int, block: int, pointers, stream: int) -> None:
        check(self.driver.cuLaunchKernel(self.function, grid, 1, 1, block, 1, 1, 0, stream, pointers, None),
              "cuLaunchKernel")  # fmt: skip


def pointers(args: list):
    """The launch's argument array for `args` (ctypes values): built once, it serves every launch that writes them."""
    return (P * len(args))(*(ctypes.addressof(a) for a in args))


def load(ptx: Path, name: str) -> Kernel:
    """Kernel `name` of `ptx` in this thread's CUDA context (the device's primary one, as torch's).

    Raises OSError, AttributeError or RuntimeError where the driver or the kernel cannot be had.
    """
    driver = ctypes.CDLL("libcuda.so.1")
    driver.cuLaunchKernel.argtypes = [P, *[ctypes.c_uint] * 7, P, ctypes.POINTER(P), P]
    module, function, context = P(), P(), P()
    check(driver.cuCtxGetCurrent(ctypes.byref(context)), "cuCtxGetCurrent")
    if not context.value:  # a thread that has not used the device yet: torch's context is the device's primary
        device = torch.cuda.current_device()
        check(driver.cuDevicePrimaryCtxRetain(ctypes.byref(context), device), "cuDevicePrimaryCtxRetain")
        check(driver.cuCtxSetCurrent(context), "cuCtxSetCurrent")
    check(driver.cuModuleLoadData(ctypes.byref(module), ptx.read_bytes() + b"\0"), "cuModuleLoadData")
    check(driver.cuModuleGetFunction(ctypes.byref(function), module, name.encode()), "cuModuleGetFunction")
    return Kernel(driver, function)


def load_mapped(ptx: Path, name: str, words: Callable[[], torch.Tensor]) -> tuple[Kernel, torch.Tensor, int] | None:
    """Kernel `name` of `ptx`, `words()` (pinned host memory the kernel reads or writes) and their device address.

    None where the driver, the kernel, the pinned memory or the mapping cannot be had (a ROCm build, no driver).
    """
    if torch.version.hip:
        return None
    try:
        kernel, mapped = load(ptx, name), words()
        pointer = ctypes.c_uint64()
        check(kernel.driver.cuMemHostGetDevicePointer_v2(ctypes.byref(pointer), P(mapped.data_ptr()), 0), "mapping")
    except (OSError, AttributeError, RuntimeError):
        return None
    return kernel, mapped, pointer.value


def check(status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"{what} failed: CUDA driver error {status}")
