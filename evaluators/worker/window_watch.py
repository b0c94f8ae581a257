"""The reference's watch over a candidate's block's host windows: the device time another context took in them.

Work a candidate leaves on the device runs on through its block's host windows: the end of its timing command, its
seal, the pipes and the pin's IPC opens. In the reference's own blocks the device idles there, and no span the parent
reads sees such work unless it delays the pin (docs/CONTRACTS.md, "What the pin leaves"). The contexts time-slice: a
kernel of the reference's that runs through those windows is switched out while another context's work runs, and the
time it loses is that work. On an H200 a one-thread watcher polling the device's global timer lost 0.82 ms to
another process's 1 ms burst run while it watched and none to one run before it, nor to its own process's burst on
another stream (bench/probes/slice_watch.py).

The parent posts "watch" to the reference before each of the candidate's blocks, armed on the candidate's reply pipe
(reply_channel): the reference waits until the pipe has bytes, reading none, and launches the watcher then; it ends the
watch after its pin of the block (judge/timing_plan.py). The block's first frame is its mark, which the harness writes
right after the last repetition's synchronize (worker/timing.py): a process that queues work after its last synchronize
queues it after its mark, or delays its mark and its span on the parent's clock with it. Begun from the parent as the
reply arrived, the watch began a median 1.2 ms after the parent had read the reply on an H200, and a 0.5 ms spin queued
after the last synchronize went unseen in every block (bench/probes/window_reach.py). What the watcher did not run of
the host's span from its launch to its end is `away_ms`: the gaps in its polls, and its own wait to start, which covers
work already running as it was launched. The reference's own blocks are watched from right before their pin, so its
`away_ms` is the launch and the wait's end alone; the candidate's also holds the switch between the two contexts
(judge/wall.py credits it once). Where the driver's API or the kernel cannot be had (a ROCm build), `load` returns None
and no block is watched.
"""

from __future__ import annotations

import ctypes
import functools
import os
import select
import time
from pathlib import Path

import torch

from evaluators.worker import ptx_kernel

PTX = Path(__file__).with_name("window_watch.ptx")
GAP_NS = 20_000  # polls take 1-2 us (a read across the bus): a gap beyond this is time switched out
CAP_NS = 1_000_000_000  # a watch left running (its pin never came) ends by itself; the next command ends it sooner
# The pin's samples take about 36 KiB an opened output (SAMPLES places and bytes, worker/pins.py), a few hundred at
# most a block; torch serves requests up to 1 MiB from 2 MiB segments, so these chunks leave 8 MiB of them cached.
RESERVE_CHUNK, RESERVE_CHUNKS = 1 << 20, 8
_CLOCK = time.perf_counter


class Watch:
    """The loaded kernel, its pinned words, its stream: `start()` as a block's windows open, `end()` after its pin."""

    def __init__(self, kernel: ptx_kernel.Kernel, words: torch.Tensor, device_pointer: int):
        self._kernel = kernel
        self._words = words  # [the flag, the gaps' total, their count, the span] (ns)
        self._flag = ctypes.c_uint32.from_address(words.data_ptr())
        self._args = [ctypes.c_uint64(device_pointer), ctypes.c_uint32(0), ctypes.c_uint64(CAP_NS),
                      ctypes.c_uint64(GAP_NS), ctypes.c_uint64(device_pointer + 8)]  # fmt: skip
        self._pointers = ptx_kernel.pointers(self._args)
        self._stream = torch.cuda.Stream()  # of its own: the pin's reads run beside it, in the same context
        self._started: float | None = None

    def start(self, channel: int | None = None, control: int | None = None) -> None:
        """Launch the watcher, once the pin's allocations have room cached (reserve).

        With `channel` (reply_channel), first wait until it has a frame to read, or the parent's pipe `control` has a
        command: armed before the candidate's block, the watch begins as the candidate marks its block's end.
        """
        reserve()
        if channel is not None:
            wait_for_frame(channel, control)
        self._args[1].value += 1
        self._started = _CLOCK()
        self._kernel.launch(1, 1, self._pointers, self._stream.cuda_stream)

    def end(self) -> dict:
        """End the watch now running: {"away_ms", "gaps_ms", "gaps", "watched_ms"}, or {} where none runs."""
        if self._started is None:
            return {}
        self._flag.value = self._args[1].value
        self._stream.synchronize()  # this stream alone: a device-wide synchronize would wait for nothing more
        host_ms = (_CLOCK() - self._started) * 1e3
        self._started = None
        total, count, span = (int(v) for v in self._words[1:].tolist())
        ran_ms = (span - total) / 1e6
        return {"away_ms": max(0.0, host_ms - ran_ms), "gaps_ms": total / 1e6, "gaps": count, "watched_ms": host_ms}


def reserve() -> None:
    """Cached room for the pin's small allocations (its samples), taken and given back to the allocator before a watch.

    While the watcher runs, anything that synchronizes the whole device waits for it, up to its cap. A sample that
    found no cached room would ask the driver for memory, which on a device the timing filled can fail, and torch then
    frees its cache: a synchronizing call. A precaution: the stalls measured (5 s a shape with a 5 s cap on level 1's
    large outputs, two H200s) came from kernels first launched in the reference's first pin of a shape, which is not
    watched since (judge/timing_plan._pins); none was traced to an allocation.
    """
    chunks = [torch.empty(RESERVE_CHUNK, dtype=torch.uint8, device="cuda") for _ in range(RESERVE_CHUNKS)]
    del chunks


def wait_for_frame(channel: int, control: int) -> None:
    """Until the pipe `channel` has bytes to read, or `control` (the parent's commands) has; reads neither.

    A hang-up wakes it too: a candidate that died has no window left to watch, and the parent's next command ends the
    watch begun then.
    """
    waiting = select.poll()
    for fd in (channel, control):
        waiting.register(fd, select.POLLIN)
    waiting.poll()


_channel: list = []  # [(pid, fd), this process's descriptor, the pipe's inode]: the latest candidate's only


def reply_channel(pid: int, fd: int) -> int | None:
    """A read end of its own of the pipe `pid` reads as `fd` (a candidate's replies, read by the parent).

    Opened through /proc (the reference shares the parent's PID namespace: judge/process.py) and never read from: it
    is only polled, so the parent still reads every frame. Kept while the parent's descriptor names the same pipe; a
    number the parent has since reused for another candidate's is opened again. None where it cannot be opened.
    """
    path = f"/proc/{pid}/fd/{fd}"
    try:
        inode = os.stat(path).st_ino
        if _channel and _channel[0] == (pid, fd) and _channel[2] == inode:
            return _channel[1]
        opened = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    if _channel:
        os.close(_channel[1])
    _channel[:] = [(pid, fd), opened, os.fstat(opened).st_ino]
    return opened


@functools.cache
def load() -> Watch | None:
    """The watch for this process's CUDA context, or None where it cannot be had (no block is then watched).

    Loaded once, while the reference starts (worker/kernel_warmup.py), as the stream's hold is.
    """
    if not torch.cuda.is_available():
        return None
    loaded = ptx_kernel.load_mapped(PTX, "watch", lambda: torch.zeros(4, dtype=torch.int64, pin_memory=True))
    return None if loaded is None else Watch(*loaded)
