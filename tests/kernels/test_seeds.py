"""Every bundled seed matches its problem's reference within the problem's tolerance, at every shape.

On CPU the seeds run under Triton's interpreter (tests/conftest.py sets TRITON_INTERPRET=1) at each cpu
shape; the `gpu` test runs them compiled at each gpu shape.
"""

import os

import pytest
import torch

from kernels.problem_types import Shape

from .helpers import case_id, seed_module, shape_cases, shape_module

DISTS = ["normal", "uniform", "heavy"]


def _check_seed(name: str, shape: Shape, dist: str, device: str) -> None:
    problem, seed = shape_module(name, shape), seed_module(name)
    torch.manual_seed(0)
    with torch.device(device):  # drawn where they are used: large gpu shapes are slow to sample on the CPU
        inputs = problem.get_inputs(dist)
    expected = problem.Model(*problem.get_init_inputs()).to(device)(*inputs)
    actual = seed.ModelNew(*problem.get_init_inputs()).to(device)(*inputs)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    torch.testing.assert_close(actual, expected, atol=problem.ATOL, rtol=problem.RTOL)


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="CPU tensors need Triton's interpreter")
@pytest.mark.parametrize("case", shape_cases("cpu"), ids=case_id)
@pytest.mark.parametrize("dist", DISTS)
def test_seed_matches_reference_at_each_cpu_shape(case, dist):
    _check_seed(*case, dist, "cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("case", shape_cases("gpu"), ids=case_id)
@pytest.mark.parametrize("dist", DISTS)
def test_seed_matches_reference_at_each_gpu_shape(case, dist):
    _check_seed(*case, dist, "cuda")
