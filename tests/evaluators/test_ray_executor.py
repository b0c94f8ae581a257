"""The Ray executor on a local two-CPU Ray: agreement with local evaluations, lost workers, a killed driver.

A module-scoped Ray (no GPU resources, no dashboard) serves every test; each CPU evaluation takes seconds.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from ray import cloudpickle  # noqa: E402

from evaluators import EvalOptions, evaluate  # noqa: E402
from evaluators.executors import make_executor  # noqa: E402
from evaluators.executors.journal import Journal  # noqa: E402
from evaluators.executors.local import ClusterError, InfrastructureError  # noqa: E402
from evaluators.executors.ray import RayExecutor, node_options  # noqa: E402
from evaluators.judge.result import EvalResult  # noqa: E402
from kernels.problem import load_problem  # noqa: E402
from kernels.problem_types import ProblemError  # noqa: E402
from tests.evaluators.conftest import PROBLEM, candidate  # noqa: E402

pytestmark = pytest.mark.slow
HERE = Path(__file__).parent
REPO = HERE.parents[1]
OPTIONS = EvalOptions(trial_seed=7, timing=False, timeout_s=60)
# The fault runners below are shipped to Ray's workers by value: the test module is not importable there.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def local_ray(tmp_path_factory):
    """A two-CPU Ray for this module; its workers inherit a cache directory of their own (node-local)."""
    saved = os.environ.get("KS_CACHE_DIR")
    os.environ["KS_CACHE_DIR"] = str(tmp_path_factory.mktemp("node-cache"))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()
    if saved is None:
        os.environ.pop("KS_CACHE_DIR", None)
    else:
        os.environ["KS_CACHE_DIR"] = saved


@pytest.fixture(scope="module")
def executor(local_ray):
    ex = make_executor("ray", "cpu")
    ex.idle_release_s = 1.0  # its slots give the CPUs back soon after its tests, for the executors of later ones
    yield ex
    ex.close()


def kill_worker_once(marker: Path):
    """A runner whose first call kills the Ray worker running it (as a dying machine would), then evaluates."""

    def runner(problem, source, device, options):
        if not marker.exists():
            marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)
        return evaluate(problem, source, device, options)

    return runner


def kill_worker_always(problem, source, device, options):
    os.kill(os.getpid(), signal.SIGKILL)


@pytest.mark.parametrize("name", ["torch_only", "wrong_shape", "raises", "segfault"])
def test_an_evaluation_on_ray_agrees_with_the_local_one(executor, name, cache_dir):
    problem = load_problem(PROBLEM)
    remote = executor.submit(problem, candidate(name), OPTIONS).result()
    local = evaluate(problem, candidate(name), "cpu", OPTIONS.model_copy(update={"cache_dir": cache_dir}))
    assert (remote.status, remote.message) == (local.status, local.message)
    # The flags' codes: a flag's text may carry what was measured (the profiled share's microseconds).
    assert [f.code for f in remote.flags] == [f.code for f in local.flags] and remote.source_hash == local.source_hash
    assert remote.node == socket.gethostname() and remote.gpu == "cpu"
    # A candidate that kills its own sandbox is its runtime_error, not a lost worker to retry.
    assert executor.progress().retried == 0


def test_a_slot_keeps_its_problems_reference_warm_across_evaluations(executor):
    # A fresh worker per evaluation (Ray's tasks with max_calls=1, the first design) started every reference cold.
    problem = load_problem(PROBLEM)
    results = [executor.submit(problem, candidate("torch_only"), OPTIONS).result() for _ in range(3)]
    assert {r.status for r in results} == {"correct"}
    assert [r.reference_warm for r in results[1:]] == [True, True]


def test_a_broken_problem_raises_as_it_does_locally(executor, cache_dir):
    problem = load_problem(HERE / "problems" / "broken_import.py")
    with pytest.raises(ProblemError) as local:
        evaluate(problem, candidate("torch_only"), "cpu", OPTIONS.model_copy(update={"cache_dir": cache_dir}))
    with pytest.raises(ProblemError) as remote:
        executor.submit(problem, candidate("torch_only"), OPTIONS).result()
    assert str(remote.value) == str(local.value)


def wait_for(release: Path):
    """A runner that holds its evaluation until the test creates `release`."""

    def runner(problem, source, device, options):
        while not release.exists():
            time.sleep(0.05)
        return evaluate(problem, source, device, options)

    return runner


def test_progress_shows_queued_running_per_node_and_done(local_ray, tmp_path):
    release = tmp_path / "release"
    ex = RayExecutor("ray", "cpu", runner=wait_for(release))
    try:
        # Two CPUs: two evaluations run, the third waits for one of them.
        futures = [ex.submit(load_problem(PROBLEM), candidate("no_modelnew"), OPTIONS) for _ in range(3)]
        deadline = time.monotonic() + 120
        while ex.progress().running != {socket.gethostname(): 2} and time.monotonic() < deadline:
            time.sleep(0.1)
        assert ex.progress().running == {socket.gethostname(): 2} and ex.progress().queued == 1
        release.touch()
        assert [future.result().status for future in futures] == ["compile_error"] * 3
        done = ex.progress()
        assert (done.queued, done.running, done.done, done.retried) == (0, {}, 3, 0)
        assert "0 queued | running: none | 3 done" == done.line()
    finally:
        ex.close()


def where_the_problem_is(problem, source, device, options):
    """A runner that reports the path the node loaded the problem from."""
    return EvalResult(problem=problem.name, device=device, status="compile_error", message=str(problem.path))


def test_every_task_finds_the_problem_at_one_path_on_its_node(local_ray):
    """So a reused worker process keeps its warm reference worker, which is keyed on the path."""
    ex = RayExecutor("ray", "cpu", runner=where_the_problem_is)
    try:
        futures = [ex.submit(load_problem(PROBLEM), candidate("torch_only"), OPTIONS) for _ in range(3)]
        paths = {future.result().message for future in futures}
        assert len(paths) == 1 and Path(os.environ["KS_CACHE_DIR"]) in Path(paths.pop()).parents
    finally:
        ex.close()


def test_a_worker_killed_mid_task_is_retried(local_ray, tmp_path):
    marker = tmp_path / "killed-once"
    ex = RayExecutor("ray", "cpu", runner=kill_worker_once(marker))
    try:
        result = ex.submit(load_problem(PROBLEM), candidate("torch_only"), OPTIONS).result()
        assert marker.exists(), "the first attempt never ran"
        assert result.status == "correct"
        assert ex.progress().retried == 1 and ex.progress().done == 1
    finally:
        ex.close()


def test_an_evaluation_lost_past_its_retries_is_not_judged(local_ray):
    ex = RayExecutor("ray", "cpu", runner=kill_worker_always, max_attempts=2)
    try:
        future = ex.submit(load_problem(PROBLEM), candidate("torch_only"), OPTIONS)
        with pytest.raises(InfrastructureError, match=r"not judged: lost 2 times \(ActorDiedError on "):
            future.result()
    finally:
        ex.close()


def test_only_options_the_caller_set_travel_and_never_the_cache_dir(tmp_path):
    options = EvalOptions(timing=False, cache_dir=tmp_path)
    assert node_options(options) == {"timing": False}
    assert node_options(None) == {}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_cluster_is_one_line(monkeypatch):
    port = free_port()
    with pytest.raises(ClusterError, match=f"cannot reach the Ray cluster at ray://127.0.0.1:{port}") as caught:
        make_executor(f"ray://127.0.0.1:{port}", "cpu")
    assert "\n" not in str(caught.value)
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
    with pytest.raises(ClusterError, match=f"cannot reach the Ray cluster at 127.0.0.1:{port}"):
        make_executor("auto", "cpu")


def run_driver(journal: Path, gcs_address: str, *extra: str) -> subprocess.CompletedProcess:
    env = os.environ | {"RAY_ADDRESS": gcs_address, "PYTHONPATH": str(REPO)}
    command = [sys.executable, str(HERE / "journal_driver.py"), "--journal", str(journal), "--cluster", "auto"]
    return subprocess.run(command + list(extra), cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


def test_a_killed_driver_resumes_with_nothing_lost_or_counted_twice(local_ray, tmp_path):
    journal = tmp_path / "journal.jsonl"
    first = run_driver(journal, local_ray, "--die-after", "2")
    assert first.returncode == -signal.SIGKILL, first.stderr[-2000:]
    judged_first = set(Journal(journal).results)
    assert len(judged_first) == 2

    second = run_driver(journal, local_ray)
    assert second.returncode == 0, second.stderr[-2000:]
    pending = next(line for line in second.stdout.splitlines() if line.startswith("pending")).split()[1:]
    lines = journal.read_text().splitlines()
    keys = set(Journal(journal).results)
    assert not judged_first & set(pending), "an evaluation judged before the kill was submitted again"
    assert len(lines) == len(keys) == 6 and keys == judged_first | set(pending)


def test_an_evaluate_only_batch_runs_on_the_cluster(local_ray, tmp_path):
    from evaluators import batch

    fixtures = REPO / "tests" / "kernels" / "fixtures" / "kernelbench"
    out = tmp_path / "out"
    args = ["--suite", f"kernelbench:{fixtures}", "--problems", "level1/2_*", "--candidates"]
    args += [str(HERE / "batch_candidates"), "--device", "cpu", "--cluster", "ray", "--out", str(out)]
    assert batch.main(args) == 0
    report = json.loads((out / "suite.json").read_text())
    assert report["machine"]["executor"].startswith("ray (ray): 1 node(s)")
    (row,) = report["rows"]
    assert row["status"] == "correct", row["message"]
    # A CPU reading that looks significant on a loaded machine appends its confirmation: every line ran on the node.
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    runs = [line[run] for line in lines for run in ("result", "strict", "control") if line.get(run)]
    assert lines and all(run["node"] == socket.gethostname() for run in runs)


def test_an_evaluate_only_batch_sends_its_strict_re_evaluation_to_the_cluster(local_ray, tmp_path, monkeypatch):
    import functools

    from evaluators import batch

    # Every speedup "implausible": the strict run must reach the node as strict (the options travel as fields set).
    monkeypatch.setattr(batch, "EvalOptions", functools.partial(EvalOptions, max_speedup=1e-6))
    fixtures = REPO / "tests" / "kernels" / "fixtures" / "kernelbench"
    out = tmp_path / "out"
    args = ["--suite", f"kernelbench:{fixtures}", "--problems", "level1/1_*", "--candidates"]
    args += [str(HERE / "batch_candidates"), "--device", "cpu", "--cluster", "ray", "--out", str(out)]
    assert batch.main(args) == 0
    first, both = (json.loads(line) for line in (out / "results.jsonl").read_text().splitlines())
    assert first["strict"] is None and both["strict"]["strict"] and both["strict"]["node"] == socket.gethostname()
    (row,) = json.loads((out / "suite.json").read_text())["rows"]
    assert row["cleared_by_strict"] and row["set_aside"] is None, row
