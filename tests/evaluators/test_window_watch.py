"""The reference's watch over a candidate's block's host windows (worker/window_watch.py): its kernel assembles, and
it is None where it cannot be had. What it sees of another context's work on a GPU: bench/probes/slice_watch.py, and
the GPU attack timing/leave_through_windows.py in test_redteam_timing_order.py."""

import ctypes.util
import shutil
import subprocess

import pytest
import torch

from evaluators.worker import window_watch


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas (the CUDA toolkit)")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_the_kernel_assembles(arch, tmp_path):
    done = subprocess.run(
        ["ptxas", f"-arch={arch}", str(window_watch.PTX), "-o", str(tmp_path / "watch.cubin")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(torch.cuda.is_available() or ctypes.util.find_library("cuda"), reason="a CUDA driver is here")
def test_no_driver_no_watch():
    assert window_watch.load() is None


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
