"""The memory planner, on a fake device: what fits, and where the tensors of an evaluation live."""

from types import SimpleNamespace

import pytest
import torch

from evaluators.worker.memory import (
    GIB,
    RESERVE_BYTES,
    ShapeSizes,
    least_timing_bytes,
    plan_memory,
    timing_layout,
)
from evaluators.worker.reference import NoRoom, shape_sizes
from kernels.problem import load_problem
from kernels.runtime import problem_runtime

FLUSH = 512 << 20
H100 = 80 * GIB


def test_a_kernelbench_relu_at_full_size_fits_an_h100_with_outputs_on_the_host():
    relu = ShapeSizes("4096x393216", 4096 * 393216 * 4, 4096 * 393216 * 4)  # 6 GiB in, 6 GiB out
    plan = plan_memory([relu], free_bytes=H100 - GIB, total_bytes=H100, flush_bytes=FLUSH, trials=3)
    assert plan.fits
    assert not plan.expected_on_device  # 18 GiB of reference outputs would crowd the candidate
    assert plan.copy_inputs and plan.handoff_on_device  # 18 GiB of candidate trial outputs, handed over on the device
    # Both sides are timed at once, each with its set, its outputs and its flush buffer, so one 6 GiB timed output is
    # kept there per side.
    layout = timing_layout(relu, H100 - GIB, FLUSH, retained=4)
    assert layout.side_by_side and layout.retained_on_device and layout.retained == 1 and layout.timing_sets >= 1


def test_two_sides_timed_at_once_only_where_a_second_call_takes_at_most_half_the_room():
    """Otherwise the reference is timed first and the candidate after it; the layout keeps more for the one."""
    for gib, together in ((20, True), (28, False)):
        shape = ShapeSizes("big", gib * GIB // 2, gib * GIB // 2)
        layout = timing_layout(shape, H100, FLUSH, retained=4)
        room = H100 - 2 * (gib * GIB // 2) - FLUSH - RESERVE_BYTES
        assert layout.side_by_side is together
        assert together == (gib * GIB + FLUSH <= room // 2)


def test_small_problems_keep_everything_on_the_device_and_rotate_several_sets():
    small = ShapeSizes("64x512", 64 * 512 * 4, 64 * 512 * 4)
    plan = plan_memory([small], free_bytes=H100, total_bytes=H100, flush_bytes=FLUSH, trials=3)
    assert plan.fits and plan.expected_on_device and plan.copy_inputs and plan.handoff_on_device
    layout = timing_layout(small, H100, FLUSH, retained=4)
    assert layout.side_by_side and layout.retained_on_device and (layout.timing_sets, layout.retained) == (4, 4)


def test_the_largest_shape_decides_the_plan_and_each_shape_its_timing():
    small, big = ShapeSizes("small", 1 << 20, 1 << 20), ShapeSizes("big", 30 * GIB, 30 * GIB)
    plan = plan_memory([small, big], free_bytes=H100, total_bytes=H100, flush_bytes=FLUSH, trials=3)
    assert plan.fits and not plan.copy_inputs  # a second 30 GiB copy would not fit: inputs are fingerprinted
    assert not plan.handoff_on_device
    layout = timing_layout(big, H100, FLUSH, retained=4)
    assert layout.timing_sets == 1 and not layout.side_by_side and not layout.retained_on_device
    assert timing_layout(small, H100, FLUSH, retained=4).timing_sets == 4


def test_one_input_set_that_cannot_fit_gets_a_reason_naming_the_sizes():
    huge = ShapeSizes("M=1048576 N=131072", 1 << 39, 1 << 39)
    plan = plan_memory([huge], free_bytes=H100, total_bytes=H100, flush_bytes=FLUSH, trials=3, reference_bytes=GIB)
    assert not plan.fits
    assert plan.reason.startswith("shape M=1048576 N=131072 needs ~1,028 GiB for one call's inputs (512 GiB) and ")
    assert "the reference (1 GiB)" in plan.reason and plan.reason.endswith("the device has 80 GiB free of 80 GiB")
    assert plan.reason.count("\n") == 0


def test_what_the_reference_holds_counts_against_the_room():
    shape = ShapeSizes("s", 10 * GIB, GIB)
    needed = 11 * GIB + FLUSH + RESERVE_BYTES
    assert plan_memory([shape], needed, H100, FLUSH, trials=3).fits
    assert not plan_memory([shape], needed, H100, FLUSH, trials=3, reference_bytes=1).fits


def test_a_timing_is_laid_out_only_where_one_side_at_a_time_fits():
    """The least a shape's timing needs: one call's inputs and outputs, the flush and the reserve."""
    avg_pool = ShapeSizes("16x64x2048x2048", 16 * GIB, 16 * 64 * 186 * 186 * 4)  # level 1's 45_Average_Pooling_2D
    least = least_timing_bytes(avg_pool, FLUSH)
    assert least == avg_pool.input_bytes + avg_pool.output_bytes + FLUSH + RESERVE_BYTES
    assert timing_layout(avg_pool, least - 1, FLUSH, retained=4) is None
    alone = timing_layout(avg_pool, least, FLUSH, retained=4)
    assert not alone.side_by_side and alone.timing_sets == 1 and not alone.retained_on_device
    # The 8.1 GiB free its candidate's timing found on an H100 was too little even one side at a time. With only the
    # two workers' and a few spares' contexts there (about 3 GiB), both sides are timed at once, one input set each.
    assert timing_layout(avg_pool, int(8.1 * GIB), FLUSH, retained=4) is None
    both = timing_layout(avg_pool, 77 * GIB, FLUSH, retained=4)
    assert both.side_by_side and both.timing_sets == 1 and both.retained_on_device and both.retained == 4


def test_one_multi_gib_timed_output_a_side_stays_on_the_device_where_half_the_room_holds_both():
    """Through the host, level1/34's 7 GiB output cost 11 s to hand over and 13 s to check on an H100."""
    instance_norm = ShapeSizes("112x64x512x512", 112 * 64 * 512 * 512 * 4, 112 * 64 * 512 * 512 * 4)
    for free in (45 * GIB, 76 * GIB):  # timed one side at a time, and both at once
        layout = timing_layout(instance_norm, free, FLUSH, retained=4)
        assert layout.retained_on_device and layout.retained == 1
    room = 45 * GIB - least_timing_bytes(instance_norm, FLUSH)
    assert room // 4 // 2 < instance_norm.output_bytes  # the quarter alone would have sent it to the host
    assert not timing_layout(instance_norm, 30 * GIB, FLUSH, retained=4).retained_on_device


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
    return SimpleNamespace(runtime=runtime, device="cpu", job={"seed": 0, "flush_mb": 512}), shape


def test_inputs_that_leave_no_room_are_sized_on_meta_and_never_built(tmp_path):
    """A model of 64 GiB of parameters is neither built nor called when its inputs alone do not fit."""

    def never(*_):
        raise AssertionError("the reference was built for a shape whose inputs do not fit")

    session, shape = _session(tmp_path, HUGE_LINEAR.replace("B, N = 8,", "B, N = 8192,"), never)
    sizes = shape_sizes(session, shape, free_bytes=GIB)
    assert (sizes.input_bytes, sizes.output_bytes) == (8192 * 131072 * 4, 0)
    assert not plan_memory([sizes], GIB, H100, FLUSH, trials=3).fits


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
