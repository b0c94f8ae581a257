"""The reference's wait, before each timing command of either side, until nothing another process did slows the device.

The candidate's processes are stopped through the reference's turns (judge/pause.py), but two things they did before
the stop can outlast it:

- Work they queued still runs: a kernel launched from a thread just after the harness's last synchronize, and before
  the reply, outlives the candidate's command, and time-slices the device with the reference's timing, which then
  reads slower (a higher baseline, a higher speedup). A tiny operator and a synchronize make a round trip of tens of
  microseconds on an idle device; while another context has work, the device serves this one only at its next time
  slice. The wait goes on until PASSES such round trips in a row were quick.
- Memory they gave back is cleared by the driver after the call returns, and meanwhile every read from device memory
  runs slow: on an H200, 13-14 % for about 2 ms per GiB given back (reads of 512 MiB to 8 GiB; 8-9 % at 64 MiB), while a
  memset or a page-strided read were not slowed (bench/probes/free_trace.py). No context's work shows it, and the
  device's free memory is whole at once. So the wait times a read of READ_BYTES until one is within QUIET_TOL of
  the process's mark. Each timed read comes right after an untimed one: a read just after writes (the other side's
  outputs, a memset) pays for writing their lines back from the cache, and read so it spread by 20-50 % from read to
  read where the clearing moves it 13-14 % (bench/probes/read_kinds.py, bench/probes/drain_fills.py). The mark is a
  low quantile (MARK_AT) of the first timed read of each of the HISTORY last waits, one a wait whatever it then waits
  for: the candidate, which can make only the waits before the reference's blocks slow, cannot raise it, and a
  quantile, unlike the quickest reads ever timed, does not sink as the process times more. A candidate that gives
  memory back before its replies, to slow the reference's blocks after them, pays for it inside its own span, which
  the parent's clock sees (judge/wall.py). Memory given back after the reply is the parent's to wait out
  (judge/pause.py, judge/timing_plan.py). A read still slow once the clearing of all the device's memory would be over
  is the device's speed now, not a clearing, and becomes the whole history, which the next quicker first reads then
  bring down (a quantile of few is their least).

Work still there after DEADLINE_S is the parent's to weigh, and the reference is not timed beside it
(judge/evaluate.py): work sized to outlast the wait and end before the candidate's next command raised the reference's
spans, from which the harness's cost is calibrated, and so lowered the candidate's floor
(tests/evaluators/redteam/test_redteam_timing_order.py).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

QUICK_S, PASSES, DEADLINE_S = 200e-6, 3, 2.0
# The read: 256 MiB is about 60 us on an H200, slowed by the clearing as much as 8 GiB was. Between reads the device is
# left alone a little, for the clearing to go on.
READ_BYTES, QUIET_TOL, MARK_AT, HISTORY, MADE, READ_PAUSE_S = 256 << 20, 0.05, 0.25, 32, 8, 0.5e-3
# The clearing ran at up to 2.2 ms per GiB given back once the call returned (bench/probes/free_trace.py, H200): what
# the whole device's memory would take, with a margin, bounds it.
CLEAR_S_PER_GIB, CLEAR_MARGIN = 2.2e-3, 1.25
_NOW, _SYNC, _SLEEP = time.perf_counter, torch.cuda.synchronize, time.sleep


@dataclass
class Drain:
    """One process's wait for the device: its round-trip tensor, its timed read and the history of first reads.

    `read()` times one read (ms). The history lasts as long as the process, across shapes and evaluations; its first
    MADE reads come as it is made, before the candidate's processes start or beside them.
    """

    probe: torch.Tensor
    read: Callable[[], float]
    clear_s: float  # the longest the clearing of memory given back can last on this device
    history: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    reads: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.history.extend(self.read() for _ in range(MADE))

    @classmethod
    def on_cuda(cls) -> Drain:
        buffer = torch.zeros(READ_BYTES // 4, device="cuda")
        buffer.sum()  # its kernel loaded before the first read is timed

        def read() -> float:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            buffer.sum()  # writes still in the cache are written back here, untimed
            start.record()
            buffer.sum()
            end.record()
            end.synchronize()
            return start.elapsed_time(end)

        total_gib = torch.cuda.mem_get_info()[1] / (1 << 30)
        return cls(torch.zeros(1, device="cuda"), read, total_gib * CLEAR_S_PER_GIB * CLEAR_MARGIN)

    def mark(self) -> float:
        """The MARK_AT quantile of the history (ms)."""
        return sorted(self.history)[int(MARK_AT * (len(self.history) - 1))]

    def wait(self) -> dict:
        """Wait for the device; the reply's facts.

        "waited_ms": for other work to leave and for the reads to settle; "idle": the other work left before
        DEADLINE_S; "reads_ms": the reads timed, the last the quiet one.
        """
        waited, idle = wait_idle(self.probe)
        if not idle:
            return {"waited_ms": waited, "idle": False, "reads_ms": []}
        started = _NOW()
        self.settle()
        return {"waited_ms": waited + (_NOW() - started) * 1e3, "idle": True,
                "reads_ms": [round(ms, 4) for ms in self.reads]}  # fmt: skip

    def settle(self) -> None:
        """Time reads until one is within QUIET_TOL of the mark, or for `clear_s` (then the last is the history)."""
        self.reads = []
        started = _NOW()
        while True:
            ms = self.read()
            self.reads.append(ms)
            quiet = ms <= self.mark() * (1 + QUIET_TOL)
            if len(self.reads) == 1:
                self.history.append(ms)
            if quiet:
                return
            if _NOW() - started >= self.clear_s:
                # The device's speed now, until quicker reads say otherwise: the quantile of few is their least.
                self.history.clear()
                self.history.append(ms)
                return
            _SLEEP(READ_PAUSE_S)


def wait_idle(probe: torch.Tensor) -> tuple[float, bool]:
    """(milliseconds waited for the device to be free of other work, 0.0 where it was at once; whether it was).

    `probe` is a device tensor of one element. False: DEADLINE_S passed with other work still on the device.
    """
    started = _NOW()
    passes, since = 0, started
    while passes < PASSES and _NOW() - started < DEADLINE_S:
        sent = _NOW()
        probe.add_(1)
        _SYNC()
        if _NOW() - sent < QUICK_S:
            passes += 1
        else:
            passes, since = 0, _NOW()
    return (since - started) * 1e3, passes >= PASSES
