"""The timed stream's hold, released by the host as soon as a repetition is issued (the CUDA driver, by ctypes).

The timing loop holds its stream before each repetition, so that all of the call's launches are queued before the
device reaches the start event and the events time the device's work, not the host's (worker/timing.py). A spin of
a fixed lead did that at the price of the lead: on level2/6 (0.87 ms a call) the lead reached its 2 ms cap, so a
repetition cost about three calls of device time. Here one thread on the device polls a word of pinned host memory
(stream_hold.ptx), which the host writes once the call has returned, its launches queued: the stream waits as long as
the host took, and the lead is only a cap. A call that synchronizes inside itself would otherwise deadlock (the device
waiting for the host, the host for the device); it waits out the cap instead, as it waited out the spin.

Where the driver's API or the kernel cannot be had (a ROCm build, a driver that cannot JIT the PTX), `load` returns
None and the loop spins for the lead as before.
"""

from __future__ import annotations

import ctypes
import functools
from pathlib import Path

import torch

from evaluators.worker import ptx_kernel

PTX = Path(__file__).with_name("stream_hold.ptx")


class StreamHold:
    """The loaded kernel and its pinned word: `hold(cap_ms)` before a repetition's call, `release()` after it."""

    def __init__(self, kernel: ptx_kernel.Kernel, word: torch.Tensor, device_pointer: int):
        self._kernel = kernel
        self._word_tensor = word  # the pinned word lives as long as the hold
        self._word = ctypes.c_uint32.from_address(word.data_ptr())
        # The kernel's arguments, written in place for each launch: the word's device address, the value it waits
        # for (one more each hold, so no earlier release counts) and its cap in nanoseconds.
        self._args = [ctypes.c_uint64(device_pointer), ctypes.c_uint32(0), ctypes.c_uint64()]
        self._pointers = ptx_kernel.pointers(self._args)

    def hold(self, cap_ms: float) -> None:
        """Queue the hold on the current stream: it ends at the next release, or after `cap_ms`."""
        self._args[1].value += 1
        self._args[2].value = int(cap_ms * 1e6)
        self._kernel.launch(1, 1, self._pointers, torch.cuda.current_stream().cuda_stream)

    def release(self) -> None:
        """End the hold now queued (a plain store: the device reads the word across the bus)."""
        self._word.value = self._args[1].value


@functools.cache
def load() -> StreamHold | None:
    """The hold for this process's CUDA context, or None where it cannot be had (the loop then spins).

    Loaded once, while the worker starts (worker/kernel_warmup.py): the driver's compile of the PTX and the pinned
    word took about 15 ms of the first timing command on an H100.
    """
    loaded = ptx_kernel.load_mapped(PTX, "hold", lambda: torch.zeros(1, dtype=torch.int32, pin_memory=True))
    return None if loaded is None else StreamHold(*loaded)
