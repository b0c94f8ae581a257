"""Fixtures of the CPU red-team tests: a private copy of the test problem, and the options they evaluate with."""

import shutil

import pytest

from evaluators import EvalOptions
from evaluators.judge import reference_pool, spares
from tests.evaluators.conftest import PROBLEM


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
def options(tmp_path):
    return EvalOptions(timeout_s=30, cache_dir=tmp_path / "cache")
