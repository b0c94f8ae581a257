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
  device's free memory is whole at once. So the wait times pairs, a read of READ_BYTES and then a memset of them, until
  one is quiet: its read/memset ratio and its memset within QUIET_TOL of the process's marks. The ratio sees the
  clearing; the memset sees what slows both, such as copies on the copy engines. A pair's parts drift together by
  20-50 % with the device's state (in a batch on an H200, first pairs after the other side's block ran 26-34 % slow,
  and some processes' pairs stayed 13-58 % slow for seconds; bench/probes/drain_fills.py), which the ratio cancels and
  the memset alone does not: the wait's first pair is taken and not judged. The marks are a low quantile (MARK_AT) of
  the HISTORY last waits' first judged pairs, one a wait whatever it then waits for: the candidate, which can make
  only the waits before the reference's blocks slow, cannot raise them, and a quantile, unlike the quickest ever
  timed, does not sink as the process times more (the quickest-three mark it replaced kept waits of a warm
  evaluation at 2.26 s of its 7.37). A candidate that gives memory back before its replies, to slow the reference's
  blocks after them, pays for it inside its own span, which the parent's clock sees (judge/wall.py). Memory given
  back after the reply is the parent's to wait out (judge/pause.py, judge/timing_plan.py). Pairs still loud once the
  clearing of all the device's memory would be over are the device's state now, not a clearing, and become the
  history.

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
# A pair: 256 MiB read, then set, is about 0.1 + 0.07 ms on an H200 in a batch. The clearing slows the read by 13-14 %
# and not the memset; a judged pair's ratio spreads about +-10 % (10th to 90th percentile) around its median, its
# memset +-6 %, so a tolerance of 12 % over the 10th percentile passes about half of quiet pairs at once and a pair
# slowed by a clearing about one time in twenty. Between pairs the device is left alone a little, for the clearing
# to go on.
READ_BYTES, QUIET_TOL, MARK_AT, HISTORY, MADE, READ_PAUSE_S = 256 << 20, 0.12, 0.1, 32, 16, 0.5e-3
# The clearing ran at up to 2.2 ms per GiB given back once the call returned (bench/probes/free_trace.py, H200): what
# the whole device's memory would take, with a margin, bounds it.
CLEAR_S_PER_GIB, CLEAR_MARGIN = 2.2e-3, 1.25
_NOW, _SYNC, _SLEEP = time.perf_counter, torch.cuda.synchronize, time.sleep

Pair = tuple[float, float]  # (read ms, memset ms)


@dataclass
class Drain:
    """One process's wait for the device: its round-trip tensor, its timed pair and the history of quiet ones.

    `time_pair()` times one read and one memset (ms). The history lasts as long as the process, across shapes and
    evaluations; its first MADE pairs come as it is made, before the candidate's processes start or beside them.
    """

    probe: torch.Tensor
    time_pair: Callable[[], Pair]
    clear_s: float  # the longest the clearing of memory given back can last on this device
    history: deque[Pair] = field(default_factory=lambda: deque(maxlen=HISTORY))
    pairs: list[Pair] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.time_pair()  # the first after whatever ran before: not one of them
        self.history.extend(self.time_pair() for _ in range(MADE))

    @classmethod
    def on_cuda(cls) -> Drain:
        buffer = torch.zeros(READ_BYTES // 4, device="cuda")
        buffer.sum()  # its kernels loaded before the first pair is timed
        buffer.zero_()

        def time_pair() -> Pair:
            start, between, end = (torch.cuda.Event(enable_timing=True) for _ in range(3))
            start.record()
            buffer.sum()
            between.record()
            buffer.zero_()
            end.record()
            end.synchronize()
            return start.elapsed_time(between), between.elapsed_time(end)

        total_gib = torch.cuda.mem_get_info()[1] / (1 << 30)
        return cls(torch.zeros(1, device="cuda"), time_pair, total_gib * CLEAR_S_PER_GIB * CLEAR_MARGIN)

    def marks(self) -> Pair:
        """(read/memset ratio, memset ms): the MARK_AT quantile of the history's."""
        at = int(MARK_AT * (len(self.history) - 1))
        return sorted(r / f for r, f in self.history)[at], sorted(f for _, f in self.history)[at]

    def quiet(self, pair: Pair) -> bool:
        ratio, fill = self.marks()
        return pair[0] / pair[1] <= ratio * (1 + QUIET_TOL) and pair[1] <= fill * (1 + QUIET_TOL)

    def wait(self) -> dict:
        """Wait for the device; the reply's facts.

        "waited_ms": for other work to leave and for the pairs to be quiet; "idle": the other work left before
        DEADLINE_S; "reads_ms", "fills_ms": the pairs timed, the last the quiet one.
        """
        waited, idle = wait_idle(self.probe)
        if not idle:
            return {"waited_ms": waited, "idle": False, "reads_ms": [], "fills_ms": []}
        started = _NOW()
        self.settle()
        reads, fills = ([round(ms, 4) for ms in part] for part in zip(*self.pairs, strict=True))
        return {"waited_ms": waited + (_NOW() - started) * 1e3, "idle": True, "reads_ms": reads, "fills_ms": fills}

    def settle(self) -> None:
        """Time pairs until one after the first is quiet, or for `clear_s`: then the wait's pairs are the history."""
        self.pairs = [self.time_pair()]
        started = _NOW()
        while True:
            pair = self.time_pair()
            self.pairs.append(pair)
            quiet = self.quiet(pair)
            if len(self.pairs) == 2:
                self.history.append(pair)
            if quiet:
                return
            if _NOW() - started >= self.clear_s:
                self.history.clear()
                self.history.extend(self.pairs[1:])
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
