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
  the device's mark, or until its reads are trusted. Each timed read comes right after an untimed one: a read just
  after writes (the other side's outputs, a memset) pays for writing their lines back from the cache, and read so it
  spread by 20-50 % from read to read where the clearing moves it 13-14 % (bench/probes/read_kinds.py,
  bench/probes/drain_waits.py).

The mark comes only from reads the candidate could not have slowed: reads begun `clear_s` (the clearing of the whole
device's memory) or more after the candidate's processes were last stopped, which the parent says in each command
(`quiet_since`, on the host's monotonic clock). Any other read the candidate can place: a clearing sized to end just
after the drain's first read before its own block slows none of its own repetitions, so marks made of first reads, or
reset to slow reads after a long wait, were kept slow by a candidate that slowed every read
(tests/evaluators/redteam/test_redteam_drain_quantile.py). The parent keeps the device's trusted reads and sends
their mark (judge/quiet_reads.py); with none yet, the wait lasts until its reads are trusted (once a device, up to
`clear_s`, 0.38 s on an H200), and so does a wait whose reads stay slow: a device slower now becomes the mark as its
trusted reads come, and a few that a clearing queued for longer than `clear_s` slowed are outvoted. A candidate that
gives memory back before its replies, to slow the reference's blocks after them, pays for it inside its own span,
which the parent's clock sees (judge/wall.py). Memory given back after the reply is the parent's to wait out
(judge/pause.py, judge/timing_plan.py).

Work still there after DEADLINE_S is the parent's to weigh, and the reference is not timed beside it
(judge/evaluate.py): work sized to outlast the wait and end before the candidate's next command raised the reference's
spans, from which the harness's cost is calibrated, and so lowered the candidate's floor
(tests/evaluators/redteam/test_redteam_timing_order.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

QUICK_S, PASSES, DEADLINE_S = 200e-6, 3, 2.0
# The read: 256 MiB is about 60-100 us on an H200, slowed by the clearing 13-14 %, as much as 8 GiB was; a read right
# after another spreads by about 3 % (90th percentile over the mark) and its buffer's placement moves it up to 2 %.
# Between reads the device is left alone a little, for the clearing to go on. Trusted reads are MADE, back to back.
READ_BYTES, QUIET_TOL, MADE, READ_PAUSE_S = 256 << 20, 0.08, 4, 0.5e-3
# The clearing ran at up to 2.2 ms per GiB given back once the call returned (bench/probes/free_trace.py, H200): what
# the whole device's memory would take, with a margin, bounds it.
CLEAR_S_PER_GIB, CLEAR_MARGIN = 2.2e-3, 1.25
# The host's monotonic clock, the one the parent's `quiet_since` is read on.
_NOW, _SYNC, _SLEEP = time.monotonic, torch.cuda.synchronize, time.sleep


@dataclass
class Drain:
    """One process's wait for the device: its round-trip tensor and its timed read. `read()` times one read (ms)."""

    probe: torch.Tensor
    read: Callable[[], float]
    clear_s: float  # the longest the clearing of memory given back can last on this device
    reads: list[float] = field(default_factory=list)

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

    def wait(self, mark_ms: float | None, quiet_since: float) -> dict:
        """Wait for the device; the reply's facts. `quiet_since`: when the candidate's processes were last stopped.

        "waited_ms": for other work to leave and for the reads to settle; "busy_ms": for the other work alone; "idle":
        it left before DEADLINE_S; "reads_ms": the reads timed, the last the quiet or trusted one; "trusted_ms": the
        trusted reads.
        """
        waited, idle = wait_idle(self.probe)
        if not idle:
            return {"waited_ms": waited, "busy_ms": waited, "idle": False, "reads_ms": [], "trusted_ms": []}
        started = _NOW()
        trusted = self.settle(mark_ms, quiet_since)
        return {"waited_ms": waited + (_NOW() - started) * 1e3, "busy_ms": waited, "idle": True,
                "reads_ms": [round(ms, 4) for ms in self.reads], "trusted_ms": trusted}  # fmt: skip

    def settle(self, mark_ms: float | None, quiet_since: float) -> list[float]:
        """Time reads until one is within QUIET_TOL of `mark_ms`, or one is trusted; the trusted reads (MADE)."""
        self.reads = []
        trusted_from = quiet_since + self.clear_s
        while True:
            begun = _NOW()
            ms = self.read()
            self.reads.append(ms)
            if begun >= trusted_from:
                trusted = [ms, *(self.read() for _ in range(MADE - 1))]
                self.reads[-1:] = trusted
                return trusted
            if mark_ms is not None and ms <= mark_ms * (1 + QUIET_TOL):
                # No candidate makes a read quicker: one well under the mark is the device's speed now, trusted.
                return [ms] if ms < mark_ms * (1 - QUIET_TOL) else []
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
