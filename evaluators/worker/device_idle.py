"""The reference's wait, before each of its timing commands, until no other process's work runs on the device.

The candidate's processes are stopped through the reference's turns (judge/pause.py), but work they queued on the
device before the stop still runs: a kernel launched from a thread just after the harness's last synchronize, and
before the reply, outlives the candidate's command, and time-slices the device with the reference's timing, which
then reads slower (a higher baseline, a higher speedup). A tiny operator and a synchronize make a round trip of tens
of microseconds on an idle device; while another context has work, the device serves this one only at its next
time slice. The reference times only after PASSES such round trips in a row were quick. Work still there after
DEADLINE_S is the parent's to weigh, and the reference is not timed beside it (judge/evaluate.py): work sized to
outlast the wait and end before the candidate's next command raised the reference's spans, from which the harness's
cost is calibrated, and so lowered the candidate's floor (tests/evaluators/redteam/test_redteam_timing_order.py).
"""

from __future__ import annotations

import time

import torch

QUICK_S, PASSES, DEADLINE_S = 200e-6, 3, 2.0
_NOW, _SYNC = time.perf_counter, torch.cuda.synchronize


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
