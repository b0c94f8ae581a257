"""The memory planner, on a fake device: what fits, and where the tensors of an evaluation live."""

from types import SimpleNamespace

from evaluators.worker.memory import GIB, RESERVE_BYTES, ShapeSizes, plan_memory
from evaluators.worker.reference import shape_sizes
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
    # 18 GiB of candidate trial outputs are handed over on the device; two 6 GiB timed outputs are kept there.
    assert plan.handoff_on_device and plan.retained_on_device and plan.retained == 2


def test_small_problems_keep_everything_on_the_device_and_rotate_several_sets():
    small = ShapeSizes("64x512", 64 * 512 * 4, 64 * 512 * 4)
    plan = plan_memory([small], free_bytes=H100, total_bytes=H100, flush_bytes=FLUSH, trials=3, retained=4)
    assert plan.fits and plan.expected_on_device and plan.retained_on_device and plan.copy_inputs
    assert plan.timing_sets == 4 and plan.retained == 4 and plan.handoff_on_device


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


def test_sizes_come_from_the_meta_device_without_building_the_model_for_real(tmp_path):
    # A KernelBench-style problem whose model would take 64 GiB of parameters if it were built for real.
    problem_file = tmp_path / "huge_linear.py"
    problem_file.write_text(
        "import torch\nimport torch.nn as nn\n\nB, N = 8, 131072\n\n\n"
        "class Model(nn.Module):\n"
        "    def __init__(self, n):\n        super().__init__()\n        self.linear = nn.Linear(n, n)\n\n"
        "    def forward(self, x):\n        return self.linear(x)\n\n\n"
        "def get_inputs():\n    return [torch.randn(B, N)]\n\n\n"
        "def get_init_inputs():\n    return [N]\n"
    )
    runtime = problem_runtime(load_problem(problem_file), "cpu")
    (shape,) = load_problem(problem_file).shapes("cpu")
    runtime.use_shape(shape)
    model = runtime.reference(0, device="meta")
    assert model.linear.weight.is_meta
    sizes = shape_sizes(SimpleNamespace(runtime=runtime, job={"seed": 0}), shape)
    assert (sizes.input_bytes, sizes.output_bytes) == (8 * 131072 * 4, 8 * 131072 * 4)
