"""The reference's watch over a candidate's block's host windows (worker/window_watch.py), on a GPU: its own process's
work on another stream is no gap. What it sees of another process's work: bench/probes/slice_watch.py, and the GPU
attack timing/leave_through_windows.py in test_redteam_timing_order.py. That its kernel assembles is in
test_ptx_kernels.py."""

import os
import threading
import time

import pytest
import torch

from evaluators.worker import window_watch


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.gpu
def test_a_quiet_watch_sees_no_gap_and_its_own_streams_work_none():
    watch = window_watch.load()
    watch.start()
    quiet = watch.end()
    side = torch.cuda.Stream()
    data = torch.ones(1 << 24, device="cuda")
    watch.start()
    with torch.cuda.stream(side):
        for _ in range(20):
            data.mul_(1.0)
    side.synchronize()
    busy = watch.end()
    assert quiet["gaps"] == busy["gaps"] == 0, (quiet, busy)
    assert watch.end() == {}  # nothing runs: nothing to end


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.gpu
def test_an_armed_watch_begins_once_the_mark_comes():
    """Armed before the candidate's block (judge/timing_plan.py): the watcher is launched only as the mark comes."""
    watch = window_watch.load()
    marks_r, marks_w = os.pipe()
    control_r, control_w = os.pipe()
    os.set_blocking(marks_r, False)
    threading.Timer(0.05, lambda: os.write(marks_w, b"m")).start()
    began = time.perf_counter()
    watch.start(marks_r, control_r)
    waited = time.perf_counter() - began
    seen = watch.end()
    assert waited >= 0.04 and seen["watched_ms"] < 40 and seen["gaps"] == 0 and seen["marked"], (waited, seen)
    for fd in (marks_r, marks_w, control_r, control_w):
        os.close(fd)
