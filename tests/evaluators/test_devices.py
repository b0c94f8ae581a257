"""Device names: `cuda:N` parsing and errors, and the one GPU a `cuda:N` worker is shown."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from evaluators.judge import toolchain
from evaluators.judge.environment import visible_device_env, worker_env
from evaluators.judge.options import EvalOptions
from evaluators.judge.toolchain import device_index, device_kind, resolve_device
from evaluators.worker.devices import Gpu, TorchBuild, torch_build, visible_gpus
from graph import lab
from tests.evaluators.conftest import CANDIDATES, PROBLEM


@pytest.fixture
def two_gpus(monkeypatch):
    gpus = (Gpu(0, "H100", "aa-0"), Gpu(1, "H100", "aa-1"))
    monkeypatch.setattr(toolchain, "visible_gpus", lambda: gpus)
    monkeypatch.setattr(lab, "visible_gpus", lambda: gpus)


def test_cuda_n_within_range_is_kept(two_gpus):
    assert resolve_device("cuda:1") == "cuda:1" and resolve_device("cuda") == "cuda"
    assert device_kind("cuda:1") == "cuda" and device_index("cuda:1") == 1 and device_index("cuda") is None


@pytest.mark.parametrize("device", ["cuda:2", "cuda:17"])
def test_cuda_n_out_of_range_is_bad_input(two_gpus, device):
    with pytest.raises(ValueError, match=r"only 2 GPU\(s\) are visible \(cuda:0..cuda:1\)"):
        resolve_device(device)


@pytest.mark.parametrize("device", ["cuda:", "cuda:-1", "cuda:x", "cpu:0", "tpu", "cuda:1:2"])
def test_malformed_devices_are_bad_input(two_gpus, device):
    with pytest.raises(ValueError, match="unknown device"):
        resolve_device(device)


def test_cuda_without_a_gpu_is_bad_input(monkeypatch):
    monkeypatch.setattr(toolchain, "visible_gpus", lambda: ())
    for device in ("cuda", "cuda:0"):
        with pytest.raises(ValueError, match="no CUDA/ROCm GPU is visible"):
            resolve_device(device)


def test_torch_build_is_read_without_importing_torch():
    """The parent learns torch's build from its version file; and the driver counts what torch does."""
    code = (
        "import json, sys; from evaluators.worker.devices import torch_build, visible_gpus; b = torch_build(); "
        "print(json.dumps([b.version, b.cuda, len(visible_gpus()), 'torch' in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [torch.__version__, torch.version.cuda, torch.cuda.device_count(), False]
    assert torch_build() == TorchBuild(torch.__version__, torch.version.cuda, torch.version.hip)
    assert len(visible_gpus()) == torch.cuda.device_count()


def test_parent_processes_import_no_torch():
    """The CLIs and the graph start their workers without importing torch themselves (4-5 s on an H100 host)."""
    code = (
        "import sys, evaluators.run, evaluators.batch, evaluators.judge.evaluate, graph.run, graph.batch; "
        "from evaluators.judge.toolchain import resolve_device, toolchain_key; resolve_device('auto'); "
        "toolchain_key(); print(sorted(m for m in ('torch', 'triton') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stderr[-2000:]


def test_worker_sees_only_its_gpu(monkeypatch, tmp_path):
    monkeypatch.delenv("HIP_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert visible_device_env(1) == {"CUDA_VISIBLE_DEVICES": "1"}
    env = worker_env("cuda:1", tmp_path, EvalOptions(cache_dir=tmp_path), "tc", "candidate")
    assert env["CUDA_VISIBLE_DEVICES"] == "1" and "TRITON_INTERPRET" not in env


def test_parents_own_device_list_is_honoured(monkeypatch):
    monkeypatch.delenv("HIP_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-aaaa, GPU-bbbb")
    assert visible_device_env(1) == {"CUDA_VISIBLE_DEVICES": "GPU-bbbb"}
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "4,6")
    assert visible_device_env(0) == {"HIP_VISIBLE_DEVICES": "4"}


def test_plain_cuda_keeps_the_parents_devices(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    env = worker_env("cuda", tmp_path, EvalOptions(cache_dir=tmp_path), "tc", "candidate")
    assert env["CUDA_VISIBLE_DEVICES"] == "3"


def test_graph_spreads_slots_over_gpus_the_evaluator_accepts(two_gpus):
    from graph.lab import gpu_slots
    from graph.routing import device_for_slot

    devices = [device_for_slot("cuda", slot, gpu_slots()) for slot in range(3)]
    assert devices == ["cuda:0", "cuda:1", "cuda:0"]
    assert [resolve_device(d) for d in devices] == devices


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without a GPU")
def test_cli_device_errors_exit_2_with_one_line(tmp_path):
    """A GPU named outright starts the workers before the driver is asked; refused, they go with the CLI."""
    for device in ("cuda:1", "tpu"):
        args = ["--problem", str(PROBLEM), "--candidate", str(CANDIDATES / "torch_only.py"), "--device", device]
        env = os.environ | {"TMPDIR": str(tmp_path)}  # where the workers' scratch directories are made
        done = subprocess.run([sys.executable, "-m", "evaluators.run", *args], capture_output=True, text=True, env=env)
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "device" in done.stderr
        assert not list(tmp_path.iterdir())
        assert not _processes_in(tmp_path, timeout_s=30)


def _processes_in(directory: Path, timeout_s: float) -> list[str]:
    """The processes whose working directory is under `directory`, once they had `timeout_s` to go."""
    deadline = time.monotonic() + timeout_s
    while True:
        inside = []
        for cwd in Path("/proc").glob("[0-9]*/cwd"):
            try:
                if str(cwd.readlink()).startswith(str(directory)):
                    inside.append(cwd.parent.name)
            except OSError:
                continue
        if not inside or time.monotonic() > deadline:
            return inside
        time.sleep(0.1)
