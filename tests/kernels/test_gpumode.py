"""GPU MODE problem directories: loading (and every way task.yml or reference.py can be broken), and the runtime."""

import importlib.util
from pathlib import Path

import pytest
import torch

from kernels.gpumode_runtime import GpuModeRuntime, derive_seed
from kernels.gpumode_static import cuda_only
from kernels.problem import load_problem
from kernels.problem_types import ProblemError
from kernels.runtime import problem_runtime

FIXTURES = Path(__file__).parent / "fixtures" / "gpumode"
PROBLEMS = FIXTURES / "problems"
SUBMISSIONS = FIXTURES / "submissions"


def submission(name: str):
    """A submission module, imported the way a worker would (after the runtime staged the problem's files)."""
    spec = importlib.util.spec_from_file_location(f"ks_test_submission_{name.replace('-', '_')}", SUBMISSIONS / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_task_yml_becomes_shapes_tolerance_and_doc():
    problem = load_problem(PROBLEMS / "row-scale")
    assert problem.format == "gpumode" and problem.name == "row-scale"
    assert problem.source == (PROBLEMS / "row-scale" / "reference.py").read_text()
    shapes = problem.shapes("cuda")
    assert [s.kind for s in shapes] == ["benchmark"] * 3 + ["test"] * 2
    assert shapes[0].params == {"rows": 16, "cols": 32, "seed": 21}
    # Two benchmarks differing only in seed keep distinct names.
    assert [s.name for s in shapes[:2]] == ["rows=16 cols=32", "rows=16 cols=32 #2"]
    assert problem.shapes("cpu") == shapes
    assert problem.tolerance == (1e-5, 1e-4)
    assert "check_against" in problem.tolerance_note
    assert "Scale each column" in problem.doc and "Ranked by: geom" in problem.doc


def test_tolerance_from_a_def_of_check_implementation_and_no_files_list():
    problem = load_problem(PROBLEMS / "softplus-rows")
    assert problem.tolerance == (1e-4, 2e-3)
    assert "may be stricter" in problem.tolerance_note
    assert [s.kind for s in problem.shapes("cpu")] == ["benchmark", "benchmark", "test"]


@pytest.mark.parametrize(
    ("variant", "says"),
    [
        ("bad-yaml", "task.yml is not valid YAML at line 3"),
        ("no-benchmarks", "needs a non-empty benchmarks list"),
        ("case-not-mapping", "benchmarks[1] is not a mapping"),
        ("no-reference", "reference.py is missing"),
        ("no-ref-kernel", "reference.py does not define ref_kernel"),
        ("multi-gpu", "is a multi-GPU one (task.yml: multi_gpu), one process per rank: not supported"),
    ],
)
def test_broken_problems_are_one_line_errors(variant, says):
    with pytest.raises(ProblemError) as error:
        load_problem(FIXTURES / "broken" / variant)
    assert says in str(error.value) and "\n" not in str(error.value)


def test_a_problem_needing_a_gpu_says_so_on_the_cpu():
    problem = load_problem(FIXTURES / "gpu-only" / "cuda-sync")
    assert problem.config_name("cpu") is None and "runs only on a GPU" in problem.tolerance_note
    with pytest.raises(ProblemError, match="runs only on a GPU, not on the cpu: reference.py uses torch.cuda."):
        GpuModeRuntime(problem, "cpu")


def test_runtime_draws_fresh_flat_inputs_and_calls_both_kernels():
    problem = load_problem(PROBLEMS / "row-scale")
    runtime = problem_runtime(problem, "cpu")
    assert isinstance(runtime, GpuModeRuntime) and runtime.candidate_entry == "custom_kernel"
    runtime.use_shape(problem.shapes("cpu")[0])
    first, again, other = runtime.inputs(1, "normal"), runtime.inputs(1, "normal"), runtime.inputs(2, "normal")
    assert [tuple(t.shape) for t in first] == [(16, 32), (32,), (16, 32)]
    assert all(t.device.type == "cpu" for t in first)
    assert torch.equal(first[0], again[0]) and not torch.equal(first[0], other[0])
    assert runtime.mutable_inputs() == {2}  # `out`, handed over empty for the kernel to fill
    expected = runtime.reference(1)(*[t.clone() for t in first])
    assert torch.allclose(expected, first[0] * first[1])
    # The #!POPCORN header lines are comments: the submission imports and runs as written.
    module = submission("row-scale.py")
    assert (SUBMISSIONS / "row-scale.py").read_text().startswith("#!POPCORN")
    got = runtime.candidate(module, 1)(*[t.clone() for t in first])
    assert torch.allclose(got, expected)
    assert runtime.roofline() is None and runtime.tolerance() == (1e-5, 1e-4)
    assert torch.Generator is torch._C.Generator  # the CPU mapping is undone after each call


def test_case_seed_is_replaced_per_trial():
    assert derive_seed(1, 21) != derive_seed(2, 21) != derive_seed(1, 22)
    assert derive_seed(1, 21) == derive_seed(1, 21)


def test_single_tensor_data_and_a_second_problem_in_the_same_process():
    problem_runtime(load_problem(PROBLEMS / "row-scale"), "cpu")  # row-scale's reference.py imported first
    problem = load_problem(PROBLEMS / "softplus-rows")
    runtime = problem_runtime(problem, "cpu")  # its own reference.py, not row-scale's cached module
    runtime.use_shape(problem.shapes("cpu")[1])
    args = runtime.inputs(3, "normal")
    assert len(args) == 1 and args[0].shape == (32, 16)
    expected = runtime.reference(3)(*args)
    assert expected.shape == (32,) and runtime.mutable_inputs() == set()
    assert torch.allclose(runtime.candidate(submission("softplus-rows.py"), 3)(*args), expected, atol=1e-5)


def test_a_submission_without_custom_kernel_is_a_one_line_error():
    problem = load_problem(PROBLEMS / "softplus-rows")
    runtime = problem_runtime(problem, "cpu")
    with pytest.raises(AttributeError, match=r"^the candidate does not define custom_kernel\(data\)$"):
        runtime.candidate(submission("no_custom_kernel.py"), 0)


@pytest.mark.parametrize(
    ("line", "needs_gpu"),
    [
        ("x = torch.cuda.synchronize()", True),
        ("a = b.view(torch.float4_e2m1fn_x2)", True),
        ("from triton import language", True),
        ("if torch.cuda.is_available():", False),
        ("a = b.to(torch.float8_e4m3fn)", False),  # FP8 has CPU kernels; FP4 does not
    ],
)
def test_what_marks_a_problem_gpu_only(line, needs_gpu):
    assert (cuda_only({"reference.py": f"import torch\n{line}\n"}) is not None) == needs_gpu
