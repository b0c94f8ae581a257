"""GPU-only checks: side streams, fresh memory, device faults, do_bench agreement, and `cuda:N` placement."""

import importlib.util
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from evaluators import EvalOptions, evaluate
from kernels.problem import load_problem
from kernels.runtime import import_problem_module
from tests.evaluators.conftest import CANDIDATES, PROBLEM, candidate

pytestmark = pytest.mark.gpu


@pytest.fixture
def run_gpu(cache_dir):
    def run(name: str, **fields):
        return evaluate(str(PROBLEM), candidate(name), "cuda", EvalOptions(**({"cache_dir": cache_dir} | fields)))

    return run


def test_side_stream_work_is_counted_or_caught_unfinished(run_gpu):
    result = run_gpu("side_stream")
    if result.status == "incorrect":
        # A kept output was read on the caller's stream before the side stream had written it: a real race.
        assert "timed repetition" in result.message, result.message
        return
    assert result.status == "correct", result.message
    assert any("other streams" in s for s in result.suspicious), result.suspicious
    assert result.set_aside  # work outliving the timed stream is a hard flag
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


@pytest.mark.parametrize("spin_ms", [0.1, 0.025])
def test_an_honest_triton_call_with_a_slower_issue_is_never_set_aside(cache_dir, spin_ms):
    """A device spin then a Triton pass, in order on the timed stream: honest, but its two launches take the host longer
    than the reference's, time the parent's clock sees and its timer does not. Where that disputes its timer, the
    parent's figure is its figure, and nothing sets it aside (judge/flags.py)."""
    source = candidate("spin_then_triton").replace("SPIN_MS = 0.1\n", f"SPIN_MS = {spin_ms}\n")
    results = [evaluate(str(PROBLEM), source, "cuda", EvalOptions(cache_dir=cache_dir)) for _ in range(3)]
    assert all(r.status == "correct" and not r.set_aside for r in results), [(r.message, r.set_aside) for r in results]


def gpu_uuid_of_run(device: str, cache_dir) -> str:
    """The UUID the report_device candidate saw from inside a worker evaluated on `device`."""
    result = evaluate(str(PROBLEM), candidate("report_device"), device, EvalOptions(cache_dir=cache_dir))
    assert result.status == "runtime_error" and "running on GPU" in result.message, result.message
    return result.message.rsplit("running on GPU ", 1)[1].strip()


def test_cuda_n_runs_the_workers_on_gpu_n(cache_dir):
    last = torch.cuda.device_count() - 1
    assert gpu_uuid_of_run(f"cuda:{last}", cache_dir) == str(torch.cuda.get_device_properties(last).uuid)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_two_gpus_evaluate_side_by_side(cache_dir):
    assert gpu_uuid_of_run("cuda:1", cache_dir) != gpu_uuid_of_run("cuda:0", cache_dir)
    options = EvalOptions(cache_dir=cache_dir)
    with ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(evaluate, str(PROBLEM), candidate("good_triton"), f"cuda:{n}", options) for n in (0, 1)]
        results = [run.result() for run in runs]
    assert [r.status for r in results] == ["correct", "correct"], [r.message for r in results]
    assert [r.device for r in results] == ["cuda:0", "cuda:1"]


@pytest.mark.parametrize("name", ["cache_by_pointer", "cache_by_shape", "replay_while_timed"])
def test_output_caches_are_incorrect_on_the_gpu(run_gpu, name):
    result = run_gpu(name)
    assert result.status == "incorrect", result.message
    assert "timed repetition" in result.message or "trial" in result.message


@pytest.mark.parametrize(
    "name",
    [
        "defer_to_detach",
        "defer_to_save",
        "defer_via_dispatch_mode",
        "hook_get_inputs",
        "hook_torch_randn",
        "hook_random",
    ],  # fmt: skip
)
def test_work_hidden_in_the_harness_is_stopped_on_the_gpu(run_gpu, name):
    result = run_gpu(name)
    assert result.status == "runtime_error" and "HarnessTampering" in result.message, result.message


def test_a_cache_keyed_on_sampled_elements_gains_nothing_on_the_gpu(run_gpu):
    result = run_gpu("cache_by_fingerprint")
    assert result.status == "correct", result.message
    assert result.speedup < 1.5  # it must compute every repetition: fresh inputs never hit its cache


def test_a_problem_larger_than_the_device_does_not_fit(cache_dir, tmp_path):
    huge = tmp_path / "huge.py"
    huge.write_text(PROBLEM.read_text().replace('"gpu": {"M": 8192, "N": 4096}', '"gpu": {"M": 1048576, "N": 131072}'))
    result = evaluate(str(huge), candidate("torch_only"), "cuda", EvalOptions(cache_dir=cache_dir))
    assert result.status == "does_not_fit", result.message
    assert "GiB free of" in result.message and "needs ~" in result.message


def test_work_a_candidate_leaves_on_the_device_after_its_reply_does_not_slow_the_reference(run_gpu):
    """The reference waits, before each of its timing commands, until the stopped candidate's queued work is done."""
    honest, attacked = run_gpu("good_triton"), run_gpu("leftover_kernel_after_reply")
    assert honest.status == attacked.status == "correct", attacked.message
    assert attacked.stages["device_drain_wait"] > 0  # it did wait (16 ms in all on an H100: the rest ran in checks)
    for clean, shape in zip(honest.shapes, attacked.shapes, strict=True):
        if clean.baseline_ms:
            assert shape.baseline_ms < 1.15 * clean.baseline_ms, (shape.name, clean.baseline_ms, shape.baseline_ms)
