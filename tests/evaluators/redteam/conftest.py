"""Fixtures of the CPU red-team tests (a private copy of the test problem, the options they evaluate with), and an
honest evaluation run beside an attacker's."""

import concurrent.futures
import shutil
import time

import pytest

from evaluators import EvalOptions, evaluate
from evaluators.judge import readonly_code, reference_pool, spares
from kernels.problem import load_problem
from tests.evaluators.conftest import PROBLEM
from tests.evaluators.redteam.test_redteam import CONTROL


@pytest.fixture
def own_problem(tmp_path):
    """A private copy of the test problem (an attack may rewrite it or break its reference), with no warm reference of
    it anywhere."""
    path = tmp_path / "problems" / PROBLEM.name
    path.parent.mkdir()
    shutil.copy(PROBLEM, path)
    reference_pool.close_all()
    yield path
    reference_pool.close_all()
    spares.close_all()


@pytest.fixture
def without_readonly_mounts(monkeypatch):
    """Candidates' workers started with every mount writable, as where none can be remounted (readonly_code.py).

    What an attack that writes outside its own directories meets there (a problem file watched and put back, a worker's
    directory kept off the import path) is then what stands. Spares started before, with the mounts, are ended.
    """
    spares.close_all()
    monkeypatch.setattr(readonly_code, "script_for", lambda cache_dir, scratch: "")
    yield
    spares.close_all()


@pytest.fixture
def options(tmp_path):
    return EvalOptions(timeout_s=30, cache_dir=tmp_path / "cache")


def honest_beside(attacker_source: str, marker: str, own_problem, options, settle_s: float = 0.0):
    """An honest evaluation of another copy of the problem, run while the attacker's evaluation holds in its trials.

    The attacker writes `marker` in the cache directory once it holds, and lets go when "release" appears there.
    """
    other = own_problem.parent.parent / "other" / PROBLEM.name
    other.parent.mkdir()
    shutil.copy(PROBLEM, other)
    holder = concurrent.futures.ThreadPoolExecutor(1)
    attacker = holder.submit(
        evaluate, load_problem(own_problem), attacker_source, "cpu", options.model_copy(update={"timeout_s": 120})
    )
    try:
        deadline = time.monotonic() + 60
        while not (options.cache_dir / marker).exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (options.cache_dir / marker).exists(), "the attacker never reached its trials"
        time.sleep(settle_s)
        return evaluate(load_problem(other), CONTROL, "cpu", options.model_copy(update={"timing": False}))
    finally:
        options.cache_dir.mkdir(parents=True, exist_ok=True)
        (options.cache_dir / "release").write_text("")  # the attacker's hold ends
        attacker.result(timeout=600)
        holder.shutdown()
