"""The worker's environment and output capture, and a worker that died before its next command."""

import io
import os
from pathlib import Path

import pytest

from evaluators.judge.environment import worker_env
from evaluators.judge.options import EvalOptions
from evaluators.judge.process import OutputCapture, Worker, WorkerFailure, harness_pid, pid_namespace_available
from evaluators.judge.toolchain import toolchain_key


def test_secrets_never_reach_the_worker(monkeypatch, tmp_path):
    monkeypatch.setenv("GOOGLE_API_KEY", "fake")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.setenv("SOME_OTHER_VARIABLE", "x")
    env = worker_env("cpu", tmp_path, EvalOptions(cache_dir=tmp_path), "tc", "candidate")
    assert "GOOGLE_API_KEY" not in env and "SOME_OTHER_VARIABLE" not in env
    assert env["CUDA_VISIBLE_DEVICES"] == "0"
    assert env["HOME"] == str(tmp_path) and env["TRITON_INTERPRET"] == "1"
    assert not any("KEY" in k or "TOKEN" in k for k in env)


def test_interpreter_is_set_for_cpu_workers_only(tmp_path):
    env = worker_env("cuda", tmp_path, EvalOptions(cache_dir=tmp_path), "tc", "candidate")
    assert "TRITON_INTERPRET" not in env
    assert Path(env["TRITON_CACHE_DIR"]).parent.name == "tc"


def test_capture_keeps_head_and_tail():
    stream = io.BufferedReader(io.BytesIO(b"START" + b"x" * 100_000 + b"END"))
    text = OutputCapture(stream, cap_bytes=1000).text(join_timeout=5)
    assert text.startswith("START") and text.endswith("END")
    assert "bytes of output dropped" in text and len(text) < 1200


def test_a_command_to_a_worker_that_died_says_how_it_died(tmp_path):
    worker = Worker("candidate", EvalOptions(cache_dir=tmp_path), toolchain_key(), "cpu")
    worker.kill()
    worker.kill()
    worker.proc.wait()
    with pytest.raises(WorkerFailure) as failure:
        worker.call({"cmd": "ping"}, "pong", "startup")  # nobody reads the pipe any more: no BrokenPipeError
    assert failure.value.kind == "crash" and "killed by SIGKILL" in failure.value.message
    worker.close()


def test_stage_time_is_the_parents_clock_around_each_command_summed_per_stage(tmp_path):
    worker = Worker("candidate", EvalOptions(cache_dir=tmp_path), toolchain_key(), "cpu")
    try:
        first = worker.call({"cmd": "ping"}, "pong", "startup")
        assert first.event == "pong" and first.span > 0
        assert worker.stage_seconds == {"startup": pytest.approx(first.span)}
    finally:
        worker.close()


def test_a_frame_nobody_asked_for_breaks_the_protocol(tmp_path):
    worker = Worker("candidate", EvalOptions(cache_dir=tmp_path), toolchain_key(), "cpu")
    try:
        worker.call({"cmd": "ping"}, "pong", "startup")
        # A ping sent behind the parent's back: its reply is a frame the parent never asked for.
        worker._send({"id": 1, "stage": "startup", "cmd": "ping"})
        with pytest.raises(WorkerFailure) as failure:
            worker.call({"cmd": "job", "job": {}}, "loaded", "build")
        assert "sent a frame nobody asked for" in failure.value.message or "did not send" in failure.value.message
    finally:
        worker.close()


def test_the_worker_finds_our_packages_without_an_installed_checkout(tmp_path):
    # A GPU machine runs the checkout as it is (no `pip install -e`): the worker imports from the path we give it.
    env = worker_env("cpu", tmp_path, EvalOptions(cache_dir=tmp_path), "tc", "candidate")
    first = Path(env["PYTHONPATH"].split(":")[0])
    assert (first / "evaluators" / "worker" / "main.py").exists() and (first / "kernels").is_dir()


@pytest.mark.parametrize("namespace", [False, True])
def test_the_parent_finds_the_process_that_hands_outputs_over_by_its_own_numbering(tmp_path, namespace):
    """The reference opens handed-over outputs as /proc/PID/fd/N, with the PID the parent found at the first ping."""
    if namespace and not pid_namespace_available():
        pytest.skip("unshare cannot make a PID namespace here")
    worker = Worker("candidate", EvalOptions(cache_dir=tmp_path, pid_namespace=namespace), toolchain_key(), "cpu")
    try:
        pong = worker.call({"cmd": "ping"}, "pong", "startup")
        found = harness_pid(worker.proc.pid, pong.meta["pid"])
        assert found is not None and (found == worker.proc.pid) != namespace  # a namespace starts it below its shell
        assert b"evaluators.worker" in Path(f"/proc/{found}/cmdline").read_bytes()
        assert harness_pid(worker.proc.pid, 10**9) is None
    finally:
        worker.close()


def test_a_confined_candidate_holds_the_write_end_of_its_marks(tmp_path):
    """Its mark of a block's end (worker/replies.py) goes to the pipe whose read end the parent keeps for the
    reference (Worker.marks): the descriptor it was started with survives its confinement, the parent's pipe."""
    worker = Worker("candidate", EvalOptions(cache_dir=tmp_path), toolchain_key(), "cpu")
    try:
        pong = worker.call({"cmd": "ping"}, "pong", "startup")
        found = harness_pid(worker.proc.pid, pong.meta.get("pid"))
        held = [Path(f"/proc/{found}/fd") / name for name in os.listdir(f"/proc/{found}/fd")]
        _, read_end = worker.marks
        pipe = f"pipe:[{os.fstat(read_end).st_ino}]"
        assert any(os.readlink(fd) == pipe for fd in held), pipe
    finally:
        worker.close()
