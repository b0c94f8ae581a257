"""The timed stream's hold, released by the host as soon as a repetition is issued (the CUDA driver, by ctypes).

The timing loop holds its stream before each repetition, so that all of the call's launches are queued before the
device reaches the start event and the events time the device's work, not the host's (worker/timing.py). A spin of
a fixed lead did that at the price of the lead: on level2/6 (0.87 ms a call) the lead reached its 2 ms cap, so a
repetition cost about three calls of device time. Here one thread on the device polls a word of pinned host memory
(stream_hold.ptx), which the host writes once the repetition's end event is queued: the stream waits as long as the
host took, and the lead is only a cap. A call that synchronizes inside itself would otherwise deadlock (the device
waiting for the host, the host for the device); it waits out the cap instead, as it waited out the spin.

Where the driver's API or the kernel cannot be had (a ROCm build, a driver that cannot JIT the PTX), `load` returns
None and the loop spins for the lead as before.
"""

from __future__ import annotations

import ctypes
import functools
from pathlib import Path

import torch

PTX = Path(__file__).with_name("stream_hold.ptx")
_P = ctypes.c_void_p


class StreamHold:
    """The loaded kernel and its pinned word: `hold(cap_ms)` before a repetition's draw, `release()` after its end."""

    def __init__(self, launch, function: ctypes.c_void_p, word: torch.Tensor, device_pointer: int):
        self._launch, self._function = launch, function
        self._word_tensor = word  # the pinned word lives as long as the hold
        self._word = ctypes.c_uint32.from_address(word.data_ptr())
        # The kernel's arguments, written in place for each launch: the word's device address, the value it waits
        # for (one more each hold, so no earlier release counts) and its cap in nanoseconds.
        self._pointer, self._want, self._cap_ns = ctypes.c_uint64(device_pointer), ctypes.c_uint32(0), ctypes.c_uint64()
        self._args = (_P * 3)(*(ctypes.addressof(a) for a in (self._pointer, self._want, self._cap_ns)))

    def hold(self, cap_ms: float) -> None:
        """Queue the hold on the current stream: it ends at the next release, or after `cap_ms`."""
        self._want.value += 1
        self._cap_ns.value = int(cap_ms * 1e6)
        stream = torch.cuda.current_stream().cuda_stream
        _check(self._launch(self._function, 1, 1, 1, 1, 1, 1, 0, stream, self._args, None), "cuLaunchKernel")

    def release(self) -> None:
        """End the hold now queued (a plain store: the device reads the word across the bus)."""
        self._word.value = self._want.value


@functools.cache
def load() -> StreamHold | None:
    """The hold for this process's CUDA context, or None where it cannot be had (the loop then spins).

    Loaded once, while the worker starts (worker/kernel_warmup.py): the driver's compile of the PTX and the pinned
    word took about 15 ms of the first timing command on an H100.
    """
    if torch.version.hip:
        return None
    try:
        driver = ctypes.CDLL("libcuda.so.1")
        driver.cuLaunchKernel.argtypes = [_P, *[ctypes.c_uint] * 7, _P, ctypes.POINTER(_P), _P]
        module, function, context = _P(), _P(), _P()
        _check(driver.cuCtxGetCurrent(ctypes.byref(context)), "cuCtxGetCurrent")
        if not context.value:  # a thread that has not used the device yet: torch's context is the device's primary
            device = torch.cuda.current_device()
            _check(driver.cuDevicePrimaryCtxRetain(ctypes.byref(context), device), "cuDevicePrimaryCtxRetain")
            _check(driver.cuCtxSetCurrent(context), "cuCtxSetCurrent")
        _check(driver.cuModuleLoadData(ctypes.byref(module), PTX.read_bytes() + b"\0"), "cuModuleLoadData")
        _check(driver.cuModuleGetFunction(ctypes.byref(function), module, b"hold"), "cuModuleGetFunction")
        word = torch.zeros(1, dtype=torch.int32, pin_memory=True)
        pointer = ctypes.c_uint64()
        _check(driver.cuMemHostGetDevicePointer_v2(ctypes.byref(pointer), _P(word.data_ptr()), 0), "mapping")
    except (OSError, AttributeError, RuntimeError):
        return None
    return StreamHold(driver.cuLaunchKernel, function, word, pointer.value)


def _check(status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"{what} failed: CUDA driver error {status}")
