"""`python -m evaluators.run`: the JSON contract, the readable summary and the exit statuses."""

import json
import subprocess
import sys

import pytest

from tests.evaluators.conftest import CANDIDATES, PROBLEM

CONTRACT_KEYS = {"status", "speedup", "runtime_ms", "baseline_ms", "suspicious", "message"}


def run_cli(*args: str, cache_dir) -> subprocess.CompletedProcess:
    env_args = [sys.executable, "-m", "evaluators.run", *args]
    return subprocess.run(env_args, capture_output=True, text=True, timeout=300, env=_env(cache_dir))


def _env(cache_dir) -> dict:
    import os

    return os.environ | {"KS_CACHE_DIR": str(cache_dir), "PYTHONPATH": os.getcwd()}


def test_json_last_line_holds_the_contract(cache_dir):
    done = run_cli(
        "--problem", str(PROBLEM), "--candidate", str(CANDIDATES / "nan_output.py"), "--device", "cpu", "--json",
        cache_dir=cache_dir,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout.strip().splitlines()[-1])
    assert CONTRACT_KEYS <= set(record)
    assert record["status"] == "incorrect" and record["speedup"] is None and isinstance(record["suspicious"], list)


def test_readable_summary_for_a_timed_candidate(cache_dir):
    done = run_cli(
        "--problem", str(PROBLEM), "--candidate", str(CANDIDATES / "good_triton.py"), "--device", "cpu",
        cache_dir=cache_dir,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "correct" in done.stdout and "speedup" in done.stdout and "interpreter" in done.stdout


def test_bad_usage_exits_2_with_one_line(cache_dir):
    cases = [
        ("--problem", str(PROBLEM), "--candidate", "no/such/candidate.py"),
        ("--problem", "no_such_problem", "--candidate", str(CANDIDATES / "good_triton.py")),
        ("--problem", str(PROBLEM.with_name("broken_import.py")), "--candidate", str(CANDIDATES / "torch_only.py")),
        ("--problem", str(PROBLEM), "--candidate", str(CANDIDATES / "torch_only.py"), "--trials", "2"),
    ]
    for args in cases:
        done = run_cli(*args, "--device", "cpu", cache_dir=cache_dir)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert done.stderr.strip() and "Traceback" not in done.stderr


def test_the_workers_started_before_the_options_are_built_are_the_ones_the_evaluation_claims(monkeypatch, tmp_path):
    # The CLI starts its workers with ProcessOptions, before pydantic loads; a key that differed from the one
    # EvalOptions gives would leave them unclaimed and start two more.
    from evaluators.judge.process_options import ProcessOptions, process_key
    from evaluators.run import options_from, parse_args, process_fields

    monkeypatch.setenv("KS_CACHE_DIR", str(tmp_path))
    for pid_namespace in ("", "0", "1"):
        monkeypatch.setenv("KS_PID_NAMESPACE", pid_namespace)
        for flags in ([], ["--timeout", "30"], ["--timeout", "2.5", "--no-timing", "--trials", "5"]):
            args = parse_args(["--problem", "p", "--candidate", "c.py", *flags])
            assert process_key(ProcessOptions(**process_fields(args))) == process_key(options_from(args))


@pytest.mark.parametrize(
    ("name", "flagged"), [("good_triton", False), ("torch_only", True), ("sees_wrapped_builder", True)]
)
def test_the_clis_candidate_wraps_triton_and_the_builder_as_it_imports_them(cache_dir, name, flagged):
    """The CLI's workers import neither before their job; a candidate that does still finds both watched."""
    done = run_cli(
        "--problem", str(PROBLEM), "--candidate", str(CANDIDATES / f"{name}.py"), "--device", "cpu", "--json",
        "--no-timing", cache_dir=cache_dir,
    )  # fmt: skip
    record = json.loads(done.stdout.strip().splitlines()[-1])
    assert record["status"] == "correct", record["message"]
    assert ("no_custom_kernel" in [flag["code"] for flag in record["flags"]]) == flagged
