"""The executor chooser and the local executor: the default path, which needs no Ray and never imports it."""

import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from evaluators import EvalOptions
from evaluators.executors import make_executor
from evaluators.executors.local import ClusterError, InfrastructureError, LocalExecutor, SlotProcess, cluster_spec
from kernels.problem import load_problem
from tests.evaluators.conftest import PROBLEM, candidate


@pytest.fixture
def ray_absent(monkeypatch):
    """Make `import ray` fail as it does where the cluster extra is not installed."""
    for name in [
        name for name in sys.modules if name == "ray" or name.startswith(("ray.", "evaluators.executors.ray"))
    ]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "ray", None)


def test_the_default_executor_is_local_and_runs_without_ray(ray_absent, cache_dir):
    executor = make_executor(None, "cpu", cpu_slots=2)
    try:
        assert isinstance(executor, LocalExecutor) and executor.describe() == "local: cpu, cpu"
        options = EvalOptions(timing=False, cache_dir=cache_dir)
        result = executor.submit(load_problem(PROBLEM), candidate("no_modelnew"), options).result()
        assert result.status == "compile_error"
        assert (result.node, result.gpu) == (socket.gethostname(), "cpu")
        progress = executor.progress()
        assert (progress.queued, progress.running, progress.done) == (0, {}, 1)
    finally:
        executor.close()


def test_a_cluster_without_ray_installed_is_one_line(ray_absent):
    with pytest.raises(ClusterError, match=r"^--cluster ray needs Ray: pip install -e '\.\[cluster\]'$"):
        make_executor("ray", "cpu")


def test_the_default_path_never_imports_ray():
    code = (
        "import sys, graph.run, evaluators.executors.local, evaluators.executors.journal; print('ray' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "False", done.stderr[-2000:]


@pytest.mark.parametrize("text", ["local", "ray", "auto", "ray://head.example:10001", "ray://10.0.0.5:10001"])
def test_cluster_values_that_are_accepted(text):
    assert cluster_spec(text) == text


@pytest.mark.parametrize("text", ["ray://head", "http://head:8265", "slurm", "ray://:10001", ""])
def test_cluster_values_that_are_refused(text):
    with pytest.raises(ValueError, match="expected local, ray, auto or ray://HOST:PORT"):
        cluster_spec(text)
    with pytest.raises(ClusterError):
        make_executor(text, "cpu")


def test_several_gpus_get_a_process_each_while_one_gpu_and_cpu_slots_stay_in_this_one():
    # Built lazily: naming the slots starts no process, so this holds on a machine without GPUs.
    assert set(LocalExecutor(["cuda:0", "cuda:1"])._slots) == {"cuda:0", "cuda:1"}
    assert LocalExecutor(["cuda:0"])._slots == {}
    assert LocalExecutor(["cpu", "cpu"])._slots == {}


def test_a_slot_process_judges_outside_this_process_and_its_death_is_not_judged(cache_dir, monkeypatch):
    def here(*_args, **_kwargs):
        raise AssertionError("evaluated in the executor's own process")

    monkeypatch.setattr("evaluators.evaluate", here)
    slot = SlotProcess("cpu")
    try:
        options = EvalOptions(timing=False, cache_dir=cache_dir)
        assert slot.evaluate(load_problem(PROBLEM), candidate("torch_only"), options).status == "correct"
        # The process is kept: a second evaluation finds it (and its warm reference) alive.
        (pid,) = slot._pool._processes
        with ThreadPoolExecutor(1) as pool:
            hanging = pool.submit(slot.evaluate, load_problem(PROBLEM), candidate("hang"), options)
            time.sleep(3.0)
            assert list(slot._pool._processes) == [pid]
            os.kill(pid, signal.SIGKILL)
            with pytest.raises(InfrastructureError, match="died under an evaluation"):
                hanging.result(timeout=60)
        assert slot.evaluate(load_problem(PROBLEM), candidate("torch_only"), options).status == "correct"
    finally:
        slot.close()


SLOT_OWNER = """
import sys, time
from evaluators import EvalOptions
from evaluators.executors.local import SlotProcess
from kernels.problem import load_problem
slot = SlotProcess("cpu")
options = EvalOptions(timing=False, cache_dir=sys.argv[3])
slot.evaluate(load_problem(sys.argv[1]), open(sys.argv[2]).read(), options)
print(*slot._pool._processes, flush=True)
time.sleep(600)
"""


def test_a_slot_process_ends_once_the_executors_process_is_killed(tmp_path, cache_dir):
    candidate_file = tmp_path / "candidate.py"
    candidate_file.write_text(candidate("torch_only"))
    owner = subprocess.Popen([sys.executable, "-c", SLOT_OWNER, str(PROBLEM), str(candidate_file), str(cache_dir)],
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        slot = int(owner.stdout.readline())
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait(timeout=30)
        deadline = time.monotonic() + 30
        while _alive(slot) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(slot), "the slot process outlived the executor's process"
    finally:
        owner.kill()


def _alive(pid: int) -> bool:
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended; only its entry waits to be reaped
