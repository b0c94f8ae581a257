"""The per-GPU timing lock holds across processes of a node, and a GPU's lock is the same under any remapping.

Ray gives each task one GPU by setting CUDA_VISIBLE_DEVICES, so the task sees it as `cuda`; a local slot sees the
same GPU as `cuda:N`. Both must take one lock, or two evaluations could time on one GPU at once.
"""

import fcntl
import os
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import pytest
import torch

from evaluators.judge.environment import visible_device_env
from evaluators.worker.device_lock import LockTimeout, device_lock

HOLD = """
import sys
from pathlib import Path
from evaluators.worker.device_lock import device_lock
with device_lock(Path(sys.argv[1]), sys.argv[2]):
    print("held", flush=True)
    sys.stdin.readline()
"""


def lock_is_free(cache_dir: Path, key: str) -> bool:
    with open(cache_dir / "locks" / f"{key}.lock", "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


def test_a_gpu_locked_by_one_process_is_locked_for_every_other(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path), "cuda-GPU-aaaa"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=os.environ | {"PYTHONPATH": os.getcwd()},
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        assert not lock_is_free(tmp_path, "cuda-GPU-aaaa")
        (tmp_path / "locks" / "cuda-GPU-bbbb.lock").touch()
        assert lock_is_free(tmp_path, "cuda-GPU-bbbb"), "another GPU's lock must stay free"
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.wait(timeout=60) == 0
        assert lock_is_free(tmp_path, "cuda-GPU-aaaa")
    finally:
        holder.kill()


def test_contexts_open_side_by_side_but_never_while_someone_times(tmp_path):
    with device_lock(tmp_path, "cuda-GPU-aaaa", shared=True):
        with device_lock(tmp_path, "cuda-GPU-aaaa", timeout_s=1, shared=True):
            pass  # a second worker opening its context does not wait for the first
        with pytest.raises(LockTimeout):
            with device_lock(tmp_path, "cuda-GPU-aaaa", timeout_s=0.2):
                pass  # a timing waits for every context being opened
    with device_lock(tmp_path, "cuda-GPU-aaaa"):
        with pytest.raises(LockTimeout):
            with device_lock(tmp_path, "cuda-GPU-aaaa", timeout_s=0.2, shared=True):
                pass  # and a context waits for the timing


@pytest.mark.gpu
def test_a_gpu_has_one_lock_key_whether_seen_as_cuda_n_or_as_the_only_gpu():
    index = torch.cuda.device_count() - 1
    code = "from evaluators.worker.device_lock import device_key; print(device_key('cuda'))"
    path = os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))  # keep where deps were put
    env = os.environ | visible_device_env(index) | {"PYTHONPATH": path}
    seen_alone = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert seen_alone.stdout.strip() == f"cuda-{torch.cuda.get_device_properties(index).uuid}", seen_alone.stderr


def _has_cuda_context(pid: int) -> bool:
    query = ["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"]
    return str(pid) in subprocess.run(query, capture_output=True, text=True).stdout.split()


@pytest.mark.gpu
def test_a_starting_worker_opens_its_cuda_context_only_while_no_one_times_on_the_gpu(tmp_path):
    from evaluators.judge.options import EvalOptions
    from evaluators.judge.process import Worker
    from evaluators.judge.toolchain import toolchain_key
    from evaluators.worker.device_lock import device_key, device_lock

    # A reference-role worker runs in our PID namespace, so nvidia-smi names it by the pid we know.
    with ExitStack() as cleanup:
        with device_lock(tmp_path, device_key("cuda")):
            worker = Worker("reference", EvalOptions(cache_dir=tmp_path), toolchain_key(), "cuda")
            cleanup.callback(worker.close)
            deadline = time.monotonic() + 30  # long enough to import torch and reach the lock
            while time.monotonic() < deadline:
                assert not _has_cuda_context(worker.proc.pid), "a context opened while the GPU was being timed"
                time.sleep(0.5)
        deadline = time.monotonic() + 60
        while not _has_cuda_context(worker.proc.pid):
            assert time.monotonic() < deadline, "the worker never opened its context once the lock was free"
            time.sleep(0.5)


def test_each_kind_shares_the_host_with_its_own_and_never_with_the_other(tmp_path):
    from evaluators.worker.device_lock import host_lock

    with host_lock(tmp_path) as first, host_lock(tmp_path) as second:  # two GPUs loading a problem's kernels
        assert first and second
        with host_lock(tmp_path, timing=True, wait_s=0.2) as timing:
            assert not timing
    with host_lock(tmp_path, timing=True, wait_s=0.2) as first, host_lock(tmp_path, timing=True, wait_s=0.2) as second:
        assert first and second  # two GPUs timing at once
        with host_lock(tmp_path, wait_s=0.2) as loading:
            assert not loading
    with host_lock(tmp_path, wait_s=0.2) as loading:  # none is left holding a file
        assert loading


@pytest.mark.parametrize("kept", ["host.loading", "host.timing"])
def test_a_process_that_keeps_the_host_lock_delays_either_kind_by_the_wait_alone(tmp_path, kept):
    """A candidate can open the lock files too: past the wait, the timing or the first calls go on without it."""
    from evaluators.worker.device_lock import host_lock

    (tmp_path / "locks").mkdir()
    with open(tmp_path / "locks" / kept, "a") as kept_file:
        fcntl.flock(kept_file, fcntl.LOCK_EX)
        for timing in (True, False):
            started = time.monotonic()
            with host_lock(tmp_path, timing=timing, wait_s=0.3) as had:
                assert not had
            assert time.monotonic() - started < 5
            with host_lock(tmp_path, timing=timing, wait_s=0.3) as had:  # the turnstile was given back
                assert not had


@pytest.mark.parametrize("waiting_is_timing", [True, False])
def test_one_waiting_for_the_other_kind_is_not_starved_by_its_kind_coming_after_it(tmp_path, waiting_is_timing):
    import threading

    from evaluators.worker.device_lock import host_lock

    order, first_in = [], threading.Event()

    def holder(name, hold_s):
        with host_lock(tmp_path, timing=not waiting_is_timing):
            order.append(name)
            first_in.set()
            time.sleep(hold_s)

    def waiting():
        with host_lock(tmp_path, timing=waiting_is_timing):
            order.append("waiting")

    earlier = threading.Thread(target=holder, args=("earlier", 0.5))
    earlier.start()
    first_in.wait()
    waiter = threading.Thread(target=waiting)
    waiter.start()
    time.sleep(0.1)  # it now waits for the earlier holder to leave, holding the turnstile
    later = threading.Thread(target=holder, args=("later", 0))
    later.start()
    for thread in (earlier, waiter, later):
        thread.join(timeout=10)
    assert order == ["earlier", "waiting", "later"]


def test_first_calls_hold_the_host_as_loading_and_timings_as_timing(cache_dir, monkeypatch):
    """The candidate's trials and the reference's expected outputs never run beside another GPU's timing."""
    import threading
    from contextlib import contextmanager

    from evaluators import EvalOptions, evaluate
    from evaluators.judge import evaluate as evaluate_module
    from evaluators.judge import process, reference_pool, timing_plan
    from kernels.problem import load_problem
    from tests.evaluators.conftest import PROBLEM, candidate

    log, real_call = [], process.Worker.call

    def note(event):  # the reference prepares in a thread of its own: each thread's events in order
        log.append((threading.get_ident(), event))

    @contextmanager
    def recorded(cache_dir, timing=False, wait_s=None):
        note("[timing" if timing else "[loading")
        yield True
        note("]")

    def call(self, command, event, stage):
        note(command["cmd"])
        return real_call(self, command, event, stage)

    for module in (evaluate_module, reference_pool, timing_plan):
        monkeypatch.setattr(module, "host_lock", recorded)
    monkeypatch.setattr(process.Worker, "call", call)
    result = evaluate(load_problem(PROBLEM), candidate("torch_only"), "cpu", EvalOptions(cache_dir=cache_dir))
    assert result.status == "correct", result.message
    threads = {ident: " ".join(e for i, e in log if i == ident) for ident, _ in log}
    spans = " | ".join(threads.values())
    assert "[loading expect ]" in spans and "[loading trials ]" in spans, spans
    timed = spans[spans.index("[timing") : spans.index("]", spans.index("[timing"))]
    assert "time" in timed and "[loading" not in timed, spans
