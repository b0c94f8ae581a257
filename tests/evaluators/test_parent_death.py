"""A candidate's worker dies with its parent process, not with the thread that started it."""

import shutil
import threading
import time

import pytest

from evaluators import EvalOptions
from evaluators.judge import process
from evaluators.judge.toolchain import toolchain_key


def test_a_worker_started_from_a_thread_that_ended_lives_on(tmp_path):
    if not (process.pid_namespace_available() and shutil.which("setpriv")):
        pytest.skip("no parent-death signal here: unshare cannot make a PID namespace, or setpriv is missing")
    options = EvalOptions(timeout_s=30, cache_dir=tmp_path, pid_namespace=True)
    started = []
    # As an evaluation's thread, or a pool's that shuts down, starts a spare and ends.
    starter = threading.Thread(
        target=lambda: started.append(process.Worker("candidate", options, toolchain_key(), "cpu"))
    )
    starter.start()
    starter.join()
    (worker,) = started
    try:
        time.sleep(1.0)  # the kernel sends the parent-death signal as the forking thread ends
        assert worker.proc.poll() is None, "the worker died with the thread that started it"
        assert worker.call({"cmd": "ping"}, "pong", "startup").event == "pong"
    finally:
        worker.close()
