"""The worker's environment and output capture, and a worker that died before its next command."""

import io
from pathlib import Path

import pytest

from evaluators.judge.environment import worker_env
from evaluators.judge.options import EvalOptions
from evaluators.judge.process import OutputCapture, Worker, WorkerFailure
from evaluators.judge.toolchain import toolchain_key


def test_secrets_never_reach_the_worker(monkeypatch, tmp_path):
    monkeypatch.setenv("GOOGLE_API_KEY", "fake")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.setenv("SOME_OTHER_VARIABLE", "x")
    env = worker_env("cpu", tmp_path, EvalOptions(cache_dir=tmp_path), "tc")
    assert "GOOGLE_API_KEY" not in env and "SOME_OTHER_VARIABLE" not in env
    assert env["CUDA_VISIBLE_DEVICES"] == "0"
    assert env["HOME"] == str(tmp_path) and env["TRITON_INTERPRET"] == "1"
    assert not any("KEY" in k or "TOKEN" in k for k in env)


def test_interpreter_is_set_for_cpu_workers_only(tmp_path):
    env = worker_env("cuda", tmp_path, EvalOptions(cache_dir=tmp_path), "tc")
    assert "TRITON_INTERPRET" not in env
    assert Path(env["TRITON_CACHE_DIR"]).parent.name == "tc"


def test_capture_keeps_head_and_tail():
    stream = io.BufferedReader(io.BytesIO(b"START" + b"x" * 100_000 + b"END"))
    text = OutputCapture(stream, cap_bytes=1000).text(join_timeout=5)
    assert text.startswith("START") and text.endswith("END")
    assert "bytes of output dropped" in text and len(text) < 1200


def test_a_command_to_a_worker_that_died_is_not_an_error_its_next_report_says_how(tmp_path):
    worker = Worker("candidate", EvalOptions(cache_dir=tmp_path), toolchain_key(), "cpu")
    worker.kill()
    worker.proc.wait()
    worker.tell({"cmd": "continue"})  # nobody reads the pipe any more: no BrokenPipeError
    with pytest.raises(WorkerFailure) as failure:
        worker.next_blob()
    assert failure.value.kind == "crash" and "killed by SIGKILL" in failure.value.message
    worker.close()


def test_a_stage_visited_once_per_shape_reports_its_total_time():
    worker = Worker.__new__(Worker)  # the parent's accounting alone, no process
    worker.stage, worker.stage_start, worker.stage_seconds, worker._finished, worker.marks = "startup", 0.0, {}, {}, {}
    for at, stage in ((1.0, "build"), (3.0, "correctness"), (4.0, "build"), (4.5, "correctness")):
        worker._on_mark(at, f"stage:{stage}")
    worker._count(6.0)  # a report arrives while the second correctness visit is under way
    assert worker.stage_seconds == {"startup": 1.0, "build": 2.5, "correctness": 2.5}
