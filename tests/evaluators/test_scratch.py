"""A worker's scratch directory goes with it, however the worker or its parent ends."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluators import EvalOptions, evaluate
from evaluators.judge import reference_pool, spares
from evaluators.judge.evaluate import WORKER_OPTIONS
from evaluators.judge.process import Worker
from evaluators.judge.toolchain import toolchain_key
from kernels.bundle import pack_problem
from kernels.problem import load_problem
from kernels.problem_types import ProblemError
from tests.evaluators.conftest import PROBLEM, candidate

KILLED_PARENT = """
import sys, time
from evaluators import EvalOptions
from evaluators.judge.process import Worker
from evaluators.judge.toolchain import toolchain_key
options = EvalOptions(cache_dir=sys.argv[1])
workers = [Worker(role, options, toolchain_key(), "cpu") for role in ("reference", "candidate")]
for worker in workers:
    worker.call({"cmd": "ping"}, "pong", "startup")
print(*(worker.scratch for worker in workers), flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("children_too", [False, True])
def test_a_killed_parent_leaves_no_directory_of_its_workers(tmp_path, children_too):
    # Killed, it runs no exit handler: its workers die with it, and only its keeper can remove their directories.
    # A Ray worker, as it exits, kills its own children too.
    parent = subprocess.Popen([sys.executable, "-c", KILLED_PARENT, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        made = [Path(path) for path in parent.stdout.readline().split()]
        assert len(made) == 2 and all(path.is_dir() for path in made), "the parent did not start its workers"
        for child in _children(parent.pid) if children_too else ():
            os.kill(child, signal.SIGKILL)
    finally:
        parent.kill()
        parent.wait()
    root = made[0].parent
    deadline = time.monotonic() + 30
    while any(path.exists() for path in [*made, root]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [path for path in made if path.exists()]
    assert root.name.startswith("ks-run-") and not root.exists()  # the parent's own root, which held them


def _children(pid: int) -> set[int]:
    """The processes `pid` started that are still its children (every thread's)."""
    tasks = Path(f"/proc/{pid}/task").iterdir()
    return {int(child) for task in tasks for child in (task / "children").read_text().split()}


def test_a_spare_that_died_waiting_leaves_no_directory(tmp_path):
    options = EvalOptions(cache_dir=tmp_path)
    spares.close_all()
    dead = Worker("candidate", options, toolchain_key(), "cpu")
    spares.give_back(dead, options, toolchain_key(), "cpu")  # it waits as the one spare
    dead.kill()
    claimed = spares.claim("candidate", options, toolchain_key(), "cpu")
    try:
        assert claimed is not dead and not dead.scratch.exists()
    finally:
        claimed.close()
        spares.close_all()


def test_a_reference_that_failed_its_job_leaves_no_directory(tmp_path, monkeypatch):
    claimed = []
    claim = spares.claim
    monkeypatch.setattr(spares, "claim", lambda *args: claimed.append(claim(*args)) or claimed[-1])
    options = EvalOptions(cache_dir=tmp_path, timing=False)
    with pytest.raises(ProblemError, match="broken on purpose"):
        evaluate(str(PROBLEM.with_name("broken_import.py")), candidate("torch_only"), "cpu", options)
    spares.close_all()
    (reference,) = [worker for worker in claimed if worker.role == "reference"]
    assert not reference.scratch.exists()


def test_a_reference_that_died_idle_leaves_no_directory(run_cpu):
    reference_pool.close_all()
    assert run_cpu("torch_only").status == "correct"
    (reference,) = reference_pool._pool.values()
    reference.worker.kill()
    assert run_cpu("torch_only").status == "correct"  # its problem's next evaluation starts another
    assert not reference.worker.scratch.exists()
    reference_pool.close_all()


def test_a_reference_that_died_in_use_leaves_no_directory_once_released(tmp_path):
    problem = load_problem(PROBLEM)
    options = EvalOptions(cache_dir=tmp_path, timing=False, timeout_s=60)
    job = {"device": "cpu", "problem": pack_problem(problem), "shapes": [s.to_json() for s in problem.shapes("cpu")]}
    job |= {"cache_dir": str(tmp_path), "trial_seed": 1, **options.model_dump(include=WORKER_OPTIONS)}
    reference_pool.close_all()
    try:
        reference = reference_pool.reference_for(problem, problem.shapes("cpu"), "cpu", options, job)
        reference.worker.kill()  # as a failed request does, in the middle of an evaluation
        reference_pool.release(reference)  # the evaluation's end
        assert not reference.worker.scratch.exists() and not reference_pool._pool
    finally:
        reference_pool.close_all()
