"""Every bundled seed matches its problem's reference within the problem's tolerance.

On CPU the seeds run under Triton's interpreter (tests/conftest.py sets TRITON_INTERPRET=1) at the cpu
config; the `gpu` test runs them compiled at the gpu config.
"""

import os

import pytest
import torch

from .helpers import problem_module, seed_module

NAMES = ["bias_gelu", "fp8_blockscale_gemm", "fused_residual_norm", "layer_norm", "matmul_bf16", "row_softmax"]


def _check_seed(name: str, config: str, dist: str, device: str) -> None:
    problem, seed = problem_module(name, config), seed_module(name)
    torch.manual_seed(0)
    inputs = [t.to(device) for t in problem.get_inputs(dist)]
    expected = problem.Model(*problem.get_init_inputs()).to(device)(*inputs)
    actual = seed.ModelNew(*problem.get_init_inputs()).to(device)(*inputs)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    torch.testing.assert_close(actual, expected, atol=problem.ATOL, rtol=problem.RTOL)


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="CPU tensors need Triton's interpreter")
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dist", ["normal", "uniform", "heavy"])
def test_seed_matches_reference_at_cpu_config(name, dist):
    _check_seed(name, "cpu", dist, "cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dist", ["normal", "uniform", "heavy"])
def test_seed_matches_reference_at_gpu_config(name, dist):
    _check_seed(name, "gpu", dist, "cuda")
