"""The reference's watch over a candidate's block's host windows: the device time another context took in them.

Work a candidate leaves on the device runs on through its block's host windows: the end of its timing command, its
seal, the pipes and the pin's IPC opens. In the reference's own blocks the device idles there, and no span the parent
reads sees such work unless it delays the pin (docs/CONTRACTS.md, "What the pin leaves"). The contexts time-slice: a
kernel of the reference's that runs through those windows is switched out while another context's work runs, and the
time it loses is that work. On an H200 a one-thread watcher polling the device's global timer lost 0.82 ms to
another process's 1 ms burst run while it watched and none to one run before it, nor to its own process's burst on
another stream (bench/probes/slice_watch.py).

The parent posts "watch" to the reference before each of the candidate's blocks, armed on the candidate's marks (Marks):
a pipe whose write end is the candidate's and whose read end the parent hands the reference as a descriptor
(judge/process.py, hand_marks), which only the reference reads. The harness writes one byte there right after the
block's last synchronize (worker/timing.py); the reference, waiting on it, launches the watcher as it comes, and ends
the watch after its pin of the block (judge/timing_plan.py), saying whether the mark came before the pin ("marked":
judge/verdicts.py flags a shape where too many did not). A process that queues work after its last synchronize queues it
after its mark, or delays its mark and its span on the parent's clock with it. Begun from the parent as the reply
arrived, the watch began a median 1.2 ms after the parent had read the reply on an H200, and a 0.5 ms spin queued after
the last synchronize went unseen in every block (bench/probes/window_reach.py). A first armed form polled the
candidate's reply pipe, opened through /proc: a red team shut it with an fchmod, and the parent could read the mark
before the reference's poll saw it. What the watcher did not run of the host's span from its launch to its end is
`away_ms`: the gaps in its polls, and its own wait to start, which covers work already running as it was launched. The
reference's own blocks are watched from right before their pin, so its `away_ms` is the launch and the wait's end alone;
the candidate's also holds the switch between the two contexts (judge/wall.py credits it once). Where the driver's API
or the kernel cannot be had (a ROCm build), `load` returns None and no block is watched.
"""

from __future__ import annotations

import ctypes
import functools
import os
import select
import socket
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
        self._marked: bool | None = None  # armed: whether the candidate's mark came before the parent's next command

    def start(self, marks: int | None = None, control: int | None = None) -> None:
        """Launch the watcher, once the pin's allocations have room cached (reserve).

        With `marks` (Marks.take), first wait for the candidate's mark of its block's end there, or a command on the
        parent's pipe `control`: armed before the candidate's block, the watch begins as the block ends. Whether the
        mark came is in what `end` says ("marked").
        """
        reserve()
        self._marked = None if marks is None else wait_for_mark(marks, control)
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
        seen = {"away_ms": max(0.0, host_ms - ran_ms), "gaps_ms": total / 1e6, "gaps": count, "watched_ms": host_ms}
        return seen if self._marked is None else seen | {"marked": self._marked}


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


def wait_for_mark(marks: int, control: int) -> bool:
    """Wait until the pipe `marks` has bytes, or `control` (the parent's commands) has; whether the marks came.

    One read of what came, however much: a red team made its mark a mebibyte with a writer behind it, and a wait that
    read the pipe to empty launched the watcher only once the flood, and the work behind it, had stopped (1.14x in the
    model; one that never stopped kept the reference from its next command). What a read leaves wakes the next watch at
    once, inside the candidate's own block, where the watcher's time counts against it; so do marks written early.
    `control` is not read. A hang-up on `marks` (a candidate that died) wakes it with none.
    """
    waiting = select.poll()
    for fd in (marks, control):
        waiting.register(fd, select.POLLIN)
    waiting.poll()
    try:
        return bool(os.read(marks, 4096))
    except BlockingIOError:
        return False


class Marks:
    """The read end of the latest candidate's marks, handed over the reference's side socket (judge/process.py)."""

    def __init__(self, side_fd: int):
        self._socket = socket.socket(fileno=side_fd)
        self._fd: int | None = None

    def take(self, new: bool) -> int:
        """The marks' descriptor: a new candidate's where `new` (the parent sent it before this command), else the last.

        Raises RuntimeError where the parent sent none, or another count than one: a broken protocol, not a verdict.
        """
        if new:
            _, fds, _, _ = socket.recv_fds(self._socket, 16, 1)
            if len(fds) != 1:
                raise RuntimeError(f"the parent handed {len(fds)} descriptors of marks, not one")
            if self._fd is not None:
                os.close(self._fd)
            self._fd = fds[0]
            os.set_blocking(self._fd, False)  # woken by the parent's command alone, its read finds nothing and goes on
        if self._fd is None:
            raise RuntimeError("a watch armed on marks the parent never handed over")
        return self._fd


@functools.cache
def load() -> Watch | None:
    """The watch for this process's CUDA context, or None where it cannot be had (no block is then watched).

    Loaded once, while the reference starts (worker/kernel_warmup.py), as the stream's hold is.
    """
    if not torch.cuda.is_available():
        return None
    loaded = ptx_kernel.load_mapped(PTX, "watch", lambda: torch.zeros(4, dtype=torch.int64, pin_memory=True))
    return None if loaded is None else Watch(*loaded)
