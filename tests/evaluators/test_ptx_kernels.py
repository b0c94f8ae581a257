"""The harness's own PTX kernels (worker/ptx_kernel.py): each assembles, and each loader gives None where no CUDA
driver is. `ptxas` (shipped with nvcc) checks the PTX on any machine that has it; their behaviour on a GPU is in
test_stream_hold.py and test_window_watch.py."""

import ctypes.util
import shutil
import subprocess

import pytest
import torch

from evaluators.worker import stream_hold, window_watch

LOADERS = {"hold": stream_hold, "watch": window_watch}


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas (the CUDA toolkit)")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("kernel", sorted(LOADERS))
def test_the_kernel_assembles(kernel, arch, tmp_path):
    done = subprocess.run(
        ["ptxas", f"-arch={arch}", str(LOADERS[kernel].PTX), "-o", str(tmp_path / f"{kernel}.cubin")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(torch.cuda.is_available() or ctypes.util.find_library("cuda"), reason="a CUDA driver is here")
@pytest.mark.parametrize("kernel", sorted(LOADERS))
def test_no_driver_no_kernel(kernel):
    assert LOADERS[kernel].load() is None
