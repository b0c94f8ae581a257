"""Bundled problems: valid CPU inputs for every distribution, and rooflines that match their formulas."""

import pytest
import torch

from .helpers import problem_module

NAMES = ["bias_gelu", "fp8_blockscale_gemm", "fused_residual_norm", "layer_norm", "matmul_bf16", "row_softmax"]
DISTS = ["normal", "uniform", "heavy"]

# Least FLOPs per problem, written out independently of the problem files.
FLOPS = {
    "row_softmax": lambda g: 5 * g.M * g.N,
    "layer_norm": lambda g: 7 * g.M * g.N,
    "bias_gelu": lambda g: 6 * g.M * g.N,
    "matmul_bf16": lambda g: 2 * g.M * g.N * g.K,
    "fused_residual_norm": lambda g: 9 * g.M * g.H,
    "fp8_blockscale_gemm": lambda g: 2 * g.m * g.n * g.k,
}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dist", DISTS)
def test_inputs_are_finite_cpu_tensors_the_reference_accepts(name, dist):
    problem = problem_module(name, "cpu")
    torch.manual_seed(0)
    inputs = problem.get_inputs(dist)
    assert inputs and all(isinstance(t, torch.Tensor) and t.device.type == "cpu" for t in inputs)
    assert all(torch.isfinite(t.float()).all() for t in inputs)
    output = problem.Model(*problem.get_init_inputs())(*inputs)
    assert torch.isfinite(output.float()).all()


@pytest.mark.parametrize("name", NAMES)
def test_distributions_differ(name):
    problem = problem_module(name, "cpu")
    draws = []
    for dist in DISTS:
        torch.manual_seed(0)
        draws.append(problem.get_inputs(dist)[0].float())
    assert not torch.equal(draws[0], draws[1]) and not torch.equal(draws[0], draws[2])
    # Heavy tails: the largest of many Student-t(3) draws dwarfs the largest normal one.
    assert draws[2].abs().max() > 2 * draws[0].abs().max()


@pytest.mark.parametrize("name", NAMES)
def test_unknown_distribution_is_refused(name):
    with pytest.raises(ValueError, match="unknown input distribution 'cauchy'"):
        problem_module(name, "cpu").get_inputs("cauchy")


def test_fp8_inputs_have_positive_block_scales_of_the_right_shape():
    problem = problem_module("fp8_blockscale_gemm", "cpu")
    for dist in DISTS:
        a, b, a_scale, b_scale = problem.get_inputs(dist)
        assert a.dtype == b.dtype == problem.FP8
        assert a_scale.shape == (problem.m, problem.k // 128) and b_scale.shape == (problem.n // 128, problem.k // 128)
        assert a_scale.dtype == b_scale.dtype == torch.float32
        assert (a_scale > 0).all() and (b_scale > 0).all()


@pytest.mark.parametrize("name", NAMES)
def test_roofline_bytes_are_each_input_read_once_and_the_output_written_once(name):
    problem = problem_module(name, "cpu")
    inputs = problem.get_inputs()
    output = problem.Model(*problem.get_init_inputs())(*inputs)
    moved = sum(t.numel() * t.element_size() for t in [*inputs, output])
    assert problem.roofline()["bytes"] == moved


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("config", ["gpu", "cpu"])
def test_roofline_flops_follow_the_formula_at_each_config(name, config):
    problem = problem_module(name, config)
    roofline = problem.roofline()
    assert set(roofline) == {"flops", "bytes"}
    assert all(isinstance(v, int) and v > 0 for v in roofline.values())
    assert roofline["flops"] == FLOPS[name](problem)


def test_gpu_configs_fill_an_h100_and_cpu_configs_stay_small():
    for name in NAMES:
        gpu, cpu = problem_module(name, "gpu").roofline(), problem_module(name, "cpu").roofline()
        # Past the H100's 50 MiB L2 in traffic, or at least 10 GFLOP of matrix work.
        assert gpu["bytes"] > 64 * 2**20 or gpu["flops"] > 10**10, name
        assert cpu["bytes"] < 2**20 and cpu["flops"] < 10**8, name
