"""`python -m evaluators.run`: the JSON contract, the readable summary and the exit statuses."""

import json
import subprocess
import sys

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
