"""GPU-only checks: side streams, fresh memory, device faults, and agreement with triton.testing.do_bench."""

import importlib.util

import pytest
import torch

from evaluators import EvalOptions, evaluate
from kernels.problem import import_problem_module, load_problem
from tests.evaluators.conftest import CANDIDATES, PROBLEM, candidate

pytestmark = pytest.mark.gpu


@pytest.fixture
def run_gpu(cache_dir):
    def run(name: str, **fields):
        return evaluate(str(PROBLEM), candidate(name), "cuda", EvalOptions(**({"cache_dir": cache_dir} | fields)))

    return run


def test_side_stream_work_is_counted(run_gpu):
    result = run_gpu("side_stream")
    assert result.status == "correct", result.message
    assert any("other streams" in s for s in result.suspicious), result.suspicious
    # Twenty-one passes over the matrix against the reference's one: it cannot come out faster.
    assert result.speedup < 1.0


def test_unwritten_fresh_memory_is_incorrect(run_gpu):
    result = run_gpu("uninitialized_output", timing=False)
    assert result.status == "incorrect"
    assert "NaN" in result.message


def test_device_fault_is_a_runtime_error(run_gpu):
    result = run_gpu("illegal_address", timing=False)
    assert result.status == "runtime_error", result.message


def test_honest_candidate_gets_roofline_and_agrees_with_do_bench(run_gpu):
    import triton.testing

    result = run_gpu("good_triton")
    assert result.status == "correct", result.diagnostics
    assert result.timing == "cuda-events" and result.roofline.fraction is not None
    assert 0 < result.roofline.fraction <= 1.0

    problem = load_problem(PROBLEM)
    module = import_problem_module(problem, "gpu")
    spec = importlib.util.spec_from_file_location("good_triton", CANDIDATES / "good_triton.py")
    good = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(good)
    model = good.ModelNew(*module.get_init_inputs()).cuda()
    x = module.get_inputs()[0].cuda()
    with torch.no_grad():
        reference_ms = triton.testing.do_bench(lambda: model(x), return_mode="median")
    assert result.runtime_ms == pytest.approx(reference_ms, rel=0.15)
