"""The executor chooser and the local executor: the default path, which needs no Ray and never imports it."""

import socket
import subprocess
import sys

import pytest

from evaluators import EvalOptions
from evaluators.executors import make_executor
from evaluators.executors.local import ClusterError, LocalExecutor, cluster_spec
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
