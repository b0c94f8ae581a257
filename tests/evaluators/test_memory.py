"""The memory planner, on a fake device: what fits, and where the tensors of an evaluation live."""

from types import SimpleNamespace

import pytest
import torch

from evaluators.worker.memory import GIB, RESERVE_BYTES, ShapeSizes, plan_memory
from evaluators.worker.reference import NoRoom, shape_sizes
from kernels.problem import load_problem
from kernels.runtime import problem_runtime

FLUSH = 512 << 20
H100 = 80 * GIB


def test_a_kernelbench_relu_at_full_size_fits_an_h100_with_outputs_on_the_host():
    relu = ShapeSizes("4096x393216", 4096 * 393216 * 4, 4096 * 393216 * 4)  # 6 GiB in, 6 GiB out
    plan = plan_memory([relu], free_bytes=H100 - GIB, total_bytes=H100, flush_bytes=FLUSH, trials=3, retained=4)
    assert plan.fits
    assert not plan.expected_on_device  # 18 GiB of reference outputs would crowd the candidate
    assert plan.copy_inputs and plan.timing_sets >= 1
    # 18 GiB of candidate trial outputs are handed over on the device. Both sides are timed at once, each with its
    # set, its outputs and its flush buffer, so one 6 GiB timed output is kept there per side.
    assert plan.handoff_on_device and plan.side_by_side and plan.retained_on_device and plan.retained == 1


def test_two_sides_timed_at_once_only_where_a_second_call_takes_at_most_half_the_room():
    """Otherwise the reference is timed first and the candidate after it; the plan keeps more for the one."""
    for gib, together in ((20, True), (28, False)):
        shape = ShapeSizes("big", gib * GIB // 2, gib * GIB // 2)
        plan = plan_memory([shape], free_bytes=H100, total_bytes=H100, flush_bytes=FLUSH, trials=3, retained=4)
        room = H100 - 2 * (gib * GIB // 2) - FLUSH - RESERVE_BYTES
        assert plan.fits and plan.side_by_side is together
        assert together == (gib * GIB + FLUSH <= room // 2)


def test_small_problems_keep_everything_on_the_device_and_rotate_several_sets():
    small = ShapeSizes("64x512", 64 * 512 * 4, 64 * 512 * 4)
    plan = plan_memory([small], free_bytes=H100, total_bytes=H100, flush_bytes=FLUSH, trials=3, retained=4)
    assert plan.fits and plan.expected_on_device and plan.retained_on_device and plan.copy_inputs
    assert plan.timing_sets == 4 and plan.retained == 4 and plan.handoff_on_device and plan.side_by_side


def test_the_largest_shape_decides():
    shapes = [ShapeSizes("small", 1 << 20, 1 << 20), ShapeSizes("big", 30 * GIB, 30 * GIB)]
    plan = plan_memory(shapes, free_bytes=H100, total_bytes=H100, flush_bytes=FLUSH, trials=3, retained=4)
    assert plan.fits and not plan.copy_inputs  # a second 30 GiB copy would not fit: inputs are fingerprinted
    assert plan.timing_sets == 1 and not plan.retained_on_device and not plan.handoff_on_device


def test_one_input_set_that_cannot_fit_gets_a_reason_naming_the_bytes():
    huge = ShapeSizes("M=1048576 N=131072", 1 << 39, 1 << 39)
    plan = plan_memory([huge], free_bytes=H100, total_bytes=H100, flush_bytes=FLUSH, trials=3, retained=4)
    assert not plan.fits
    needed = (1 << 40) + FLUSH + RESERVE_BYTES
    assert f"needs {needed:,} bytes" in plan.reason and f"{H100:,} bytes free of {H100:,}" in plan.reason
    assert plan.reason.count("\n") == 0


HUGE_LINEAR = (
    "import torch\nimport torch.nn as nn\n\nB, N = 8, 131072\n\n\n"
    "class Model(nn.Module):\n"
    "    def __init__(self, n):\n        super().__init__()\n        self.linear = nn.Linear(n, n)\n\n"
    "    def forward(self, x):\n        return self.linear(x)\n\n\n"
    "def get_inputs():\n    return [torch.randn(B, N)]\n\n\n"
    "def get_init_inputs():\n    return [N]\n"
)


def _session(tmp_path, text: str, reference=None):
    problem_file = tmp_path / "problem.py"
    problem_file.write_text(text)
    problem = load_problem(problem_file)
    runtime = problem_runtime(problem, "cpu")
    (shape,) = problem.shapes("cpu")
    runtime.use_shape(shape)
    if reference is not None:
        runtime.reference = reference
    return SimpleNamespace(runtime=runtime, job={"seed": 0, "flush_mb": 512}), shape


def test_inputs_that_leave_no_room_are_sized_on_meta_and_never_built(tmp_path):
    """A model of 64 GiB of parameters is neither built nor called when its inputs alone do not fit."""

    def never(*_):
        raise AssertionError("the reference was built for a shape whose inputs do not fit")

    session, shape = _session(tmp_path, HUGE_LINEAR.replace("B, N = 8,", "B, N = 8192,"), never)
    sizes = shape_sizes(session, shape, free_bytes=GIB)
    assert (sizes.input_bytes, sizes.output_bytes) == (8192 * 131072 * 4, 0)
    assert not plan_memory([sizes], GIB, H100, FLUSH, trials=3, retained=4).fits


def test_output_sizes_come_from_one_real_call(tmp_path):
    """Outputs are measured on a real call (a meta forward pass imported dynamo and sympy: seconds on a GPU host)."""
    session, shape = _session(tmp_path, HUGE_LINEAR.replace("B, N = 8, 131072", "B, N = 8, 256"))
    sizes = shape_sizes(session, shape, free_bytes=H100)
    assert (sizes.input_bytes, sizes.output_bytes) == (8 * 256 * 4, 8 * 256 * 4)


def test_a_first_call_out_of_memory_means_it_does_not_fit(tmp_path):
    """The reference running out of memory while it is sized is a clean does-not-fit, naming the shape."""

    def oom(*_):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 64.00 GiB")

    session, shape = _session(tmp_path, HUGE_LINEAR, oom)
    with pytest.raises(NoRoom, match=f"shape {shape.name}: the reference's first call ran out of device memory"):
        shape_sizes(session, shape, free_bytes=H100)
