"""Several shapes per problem: every shape checked, benchmark shapes timed, the summary a geometric mean."""

import math

import pytest

from evaluators import EvalOptions, evaluate
from kernels.problem import load_problem
from tests.evaluators.conftest import HERE, PROBLEM, candidate

SHAPED = HERE / "problems" / "shaped_scale.py"


def test_shapes_are_read_without_running_the_file():
    problem = load_problem(SHAPED)
    assert [(s.name, s.kind) for s in problem.shapes("cpu")] == [
        ("M=8 N=64", "benchmark"),
        ("M=16 N=32", "benchmark"),
        ("M=3 N=7", "test"),
    ]
    assert [s.name for s in problem.benchmark_shapes("cuda")] == ["M=4096 N=4096", "M=1024 N=8192"]


def test_a_kernelbench_file_is_one_shape_of_its_own_globals(tmp_path):
    plain = tmp_path / "plain.py"
    plain.write_text("\n".join(line for line in PROBLEM.read_text().splitlines() if "CONFIGS" not in line))
    plain.write_text(plain.read_text().replace("import torch.nn as nn", "import torch.nn as nn\nM, N = 8, 64"))
    shapes = load_problem(plain).shapes("cpu")
    assert [(s.name, s.kind, s.params) for s in shapes] == [("default", "benchmark", {})]


def test_every_shape_is_judged_and_the_speedup_is_their_geometric_mean(cache_dir):
    result = evaluate(str(SHAPED), candidate("good_triton"), "cpu", EvalOptions(cache_dir=cache_dir, timeout_s=30))
    assert result.status == "correct", result.message
    assert [(s.name, s.status) for s in result.shapes] == [
        ("M=8 N=64", "correct"),
        ("M=16 N=32", "correct"),
        ("M=3 N=7", "correct"),
    ]
    timed = [s for s in result.shapes if s.kind == "benchmark"]
    assert all(s.runtime_ms and s.baseline_ms and s.speedup for s in timed)
    assert result.shapes[2].runtime_ms is None  # a test shape is checked, never timed
    assert result.speedup == pytest.approx(math.sqrt(timed[0].speedup * timed[1].speedup))
    assert result.runtime_ms == timed[0].runtime_ms and "geometric-mean speedup" in result.message


def test_a_kernel_right_at_one_shape_only_is_incorrect_naming_the_shape(cache_dir):
    options = EvalOptions(cache_dir=cache_dir, timing=False)
    result = evaluate(str(SHAPED), candidate("hard_coded_size"), "cpu", options)
    assert result.status in ("incorrect", "runtime_error"), result.message
    assert "M=16 N=32" in result.message
    assert result.shapes[0].status == "correct"


def test_a_candidate_killed_between_shapes_is_its_own_runtime_error(cache_dir):
    source = candidate("dies_at_second_shape")
    result = evaluate(str(SHAPED), source, "cpu", EvalOptions(cache_dir=cache_dir, timeout_s=30))
    assert result.status == "runtime_error", result.message
    assert "killed by SIGKILL" in result.message and "out-of-memory killer" in result.message
