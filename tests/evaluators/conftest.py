"""Shared fixtures: the tiny test problem, candidate sources by name, and a fast CPU evaluation."""

from pathlib import Path

import pytest

from evaluators import EvalOptions, evaluate

HERE = Path(__file__).parent
PROBLEM = HERE / "problems" / "scale_shift.py"
CANDIDATES = HERE / "candidates"


def candidate(name: str) -> str:
    # The one candidate that does not parse is kept as .txt, so linting the repository stays clean.
    path = CANDIDATES / f"{name}.py"
    return (path if path.exists() else path.with_suffix(".txt")).read_text()


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("ks-cache")


@pytest.fixture
def run_cpu(cache_dir):
    """Evaluate a named candidate on cpu; correctness only unless timing=True is passed."""

    def run(name: str, **fields):
        options = EvalOptions(**({"timing": False, "timeout_s": 10, "cache_dir": cache_dir} | fields))
        return evaluate(str(PROBLEM), candidate(name), "cpu", options)

    return run
