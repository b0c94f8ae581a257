"""Bundled problems: valid CPU inputs at every cpu shape and distribution, rooflines that match their formulas."""

import math

import pytest
import torch

from kernels.problem import load_problem

from .helpers import NAMES, case_id, problem_module, shape_cases, shape_module

DISTS = ["normal", "uniform", "heavy"]
CPU_CASES = shape_cases("cpu")
ALL_CASES = CPU_CASES + shape_cases("gpu")

# Least FLOPs per problem, written out independently of the problem files.
FLOPS = {
    "row_softmax": lambda g: 5 * g.M * g.N,
    "layer_norm": lambda g: 7 * g.M * g.N,
    "bias_gelu": lambda g: 6 * g.M * g.N,
    "matmul_bf16": lambda g: 2 * g.M * g.N * g.K,
    "fused_residual_norm": lambda g: 9 * g.M * g.H,
    "fp8_blockscale_gemm": lambda g: 2 * g.m * g.n * g.k,
}


@pytest.mark.parametrize("case", CPU_CASES, ids=case_id)
@pytest.mark.parametrize("dist", DISTS)
def test_inputs_are_finite_cpu_tensors_the_reference_accepts(case, dist):
    problem = shape_module(*case)
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


@pytest.mark.parametrize("shape", load_problem("fp8_blockscale_gemm").shape_sets["cpu"], ids=lambda s: s.name)
def test_fp8_inputs_have_positive_block_scales_of_the_right_shape(shape):
    problem = shape_module("fp8_blockscale_gemm", shape)
    for dist in DISTS:
        a, b, a_scale, b_scale = problem.get_inputs(dist)
        assert a.dtype == b.dtype == problem.FP8
        assert a.shape == (problem.m, problem.k) and b.shape == (problem.n, problem.k)
        # A partial last block of n still gets its own row of scales.
        assert a_scale.shape == (problem.m, problem.k // 128)
        assert b_scale.shape == (math.ceil(problem.n / 128), problem.k // 128)
        assert a_scale.dtype == b_scale.dtype == torch.float32
        assert (a_scale > 0).all() and (b_scale > 0).all()


def test_fp8_shapes_include_a_partial_block_of_n_on_each_device():
    for shapes in load_problem("fp8_blockscale_gemm").shape_sets.values():
        assert any(shape.params["n"] % 128 for shape in shapes)
        assert all(shape.params["k"] % 128 == 0 for shape in shapes)


def test_fp8_reference_scales_a_partial_block_by_the_last_row_of_b_scale():
    problem = shape_module("fp8_blockscale_gemm", load_problem("fp8_blockscale_gemm").shape_sets["cpu"][0])
    a = torch.ones(1, 128).to(problem.FP8)
    b = torch.ones(130, 128).to(problem.FP8)
    a_scale = torch.ones(1, 1)
    b_scale = torch.tensor([[2.0], [3.0]])
    c = problem.Model()(a, b, a_scale, b_scale)
    assert c.shape == (1, 130)
    assert (c[0, :128] == 256).all() and (c[0, 128:] == 384).all()


@pytest.mark.parametrize("case", CPU_CASES, ids=case_id)
def test_roofline_bytes_are_each_input_read_once_and_the_output_written_once(case):
    problem = shape_module(*case)
    inputs = problem.get_inputs()
    output = problem.Model(*problem.get_init_inputs())(*inputs)
    moved = sum(t.numel() * t.element_size() for t in [*inputs, output])
    assert problem.roofline()["bytes"] == moved


@pytest.mark.parametrize("case", ALL_CASES, ids=case_id)
def test_roofline_flops_follow_the_formula_at_each_shape(case):
    problem = shape_module(*case)
    roofline = problem.roofline()
    assert set(roofline) == {"flops", "bytes"}
    assert all(isinstance(v, int) and v > 0 for v in roofline.values())
    assert roofline["flops"] == FLOPS[case[0]](problem)


def _fills_an_h100(roofline: dict) -> bool:
    # Past the H100's 50 MiB L2 in traffic, or at least 10 GFLOP of matrix work.
    return roofline["bytes"] > 64 * 2**20 or roofline["flops"] > 10**10


@pytest.mark.parametrize("name", NAMES)
def test_gpu_shapes_fill_an_h100_and_cpu_shapes_stay_small(name):
    problem = load_problem(name)
    gpu = [shape_module(name, shape).roofline() for shape in problem.benchmark_shapes("cuda")]
    # The first (the file's own globals) and the largest benchmark shapes fill the GPU; others may be smaller.
    assert _fills_an_h100(gpu[0]) and _fills_an_h100(max(gpu, key=lambda r: r["bytes"]))
    for shape in problem.shapes("cuda"):
        assert shape_module(name, shape).roofline()["bytes"] < 4 * 2**30, shape.name
    for shape in problem.shapes("cpu"):
        cpu = shape_module(name, shape).roofline()
        assert cpu["bytes"] < 2**20 and cpu["flops"] < 10**8, shape.name
