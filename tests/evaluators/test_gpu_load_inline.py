"""On a GPU, a CUDA C++ candidate built with load_inline is compiled, checked and timed like a Triton one."""

import pytest

from evaluators import EvalOptions, evaluate
from tests.evaluators.conftest import PROBLEM, candidate

pytestmark = pytest.mark.gpu


def test_load_inline_candidate_is_built_checked_and_timed(cache_dir):
    options = EvalOptions(cache_dir=cache_dir, build_timeout_s=600)
    result = evaluate(str(PROBLEM), candidate("load_inline_cuda"), "cuda", options)
    assert result.status == "correct", result.diagnostics
    assert result.timing == "cuda-events" and result.speedup is not None and result.speedup > 0
    assert not any("no custom kernel" in s for s in result.suspicious), result.suspicious
    # The same source again comes from the build cache: no nvcc run the second time.
    again = evaluate(str(PROBLEM), candidate("load_inline_cuda"), "cuda", options)
    assert again.status == "correct"
    assert again.stages["build"] < result.stages["build"], (again.stages, result.stages)
