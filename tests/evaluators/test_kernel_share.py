"""`no_custom_kernel` by where a profiled call's time goes: the attribution, the judge's rule, and evaluations."""

import time
import types
from types import SimpleNamespace

import pytest
import torch
from torch.autograd import DeviceType
from torch.autograd.profiler_util import Interval

from evaluators import EvalOptions, evaluate
from evaluators.judge import verdicts
from evaluators.judge.result import EvalResult, ShapeResult
from evaluators.worker import kernel_marks, kernel_share
from evaluators.worker.kernel_share import Owners, Span, Work, split
from tests.evaluators.conftest import HERE, PROBLEM, candidate

MATMUL = HERE / "problems" / "matmul_bias_relu.py"
TRITON, LAUNCH, EXTENSION, FAILED = (
    kernel_marks.TRITON,
    kernel_marks.LAUNCH,
    kernel_marks.EXTENSION,
    kernel_marks.FAILED,
)


# --- The attribution, on event lists made up here (the CUDA path's logic runs on the CPU too) ---


def test_a_kernel_is_the_candidates_or_the_librarys_by_the_innermost_span_around_its_launch():
    spans = [
        Span("aten::linear", 10, 300),
        Span("aten::addmm", 20, 290),  # cuBLAS inside a torch operator: the library's
        Span(f"{TRITON} bias_relu", 400, 450),  # its own Triton launch
        Span(f"{EXTENSION} ext.forward", 500, 600),
        Span("aten::mm", 510, 540),  # the extension calling aten: the library's
        Span("myext::fused", 650, 700),  # an operator its extension registered
        Span("Torch-Compiled Region: 0/0", 800, 900),  # torch.compile: the compiler's, so the library's
        Span("## Call CompiledFxGraph abc ##", 810, 890),
    ]
    work = [
        Work("sm90_xmma_gemm_f32f32_tf32f32", 900.0, at=100),
        Work("bias_relu", 30.0, at=420),
        Work("my_kernel(float const*, float*)", 7.0, at=560),
        Work("ampere_sgemm_128x64_nn", 50.0, at=520),
        Work("ampere_sgemm_128x64_tn", 5.0, at=580),  # cuBLAS called by the extension itself
        Work("fused_kernel", 11.0, at=680),
        Work("triton_poi_fused_add_relu_0", 40.0, at=850),
    ]
    owners = Owners(triton=frozenset({"bias_relu"}), namespaces=frozenset({"myext"}), extension=True)
    got = split(work, spans, owners, kernels=True)
    assert got["own_us"] == 30 + 7 + 11 and got["total_us"] == sum(w.us for w in work)
    assert got["share"] == pytest.approx(48 / 1043)
    assert got["library"][0] == "sm90_xmma_gemm_f32f32_tf32f32: 900 us"


def test_a_kernel_launched_outside_every_span_is_the_candidates_only_by_name_or_extension():
    work = [
        Work("scale_shift_kernel", 20.0),  # replayed by a CUDA graph: no launch of its own, its Triton kernel's name
        Work("void at::native::vectorized_elementwise_kernel<4>(int)", 30.0, at=5),
        Work("at::cuda::(anonymous namespace)::spin_kernel(long)", 100.0, at=6),  # torch.cuda._sleep
        Work("my_kernel(float*)", 10.0, at=7),
    ]
    triton_only = Owners(triton=frozenset({"scale_shift_kernel"}))
    assert split(work, [], triton_only, kernels=True)["own_us"] == 20
    with_extension = Owners(triton=frozenset({"scale_shift_kernel"}), extension=True)
    assert split(work, [], with_extension, kernels=True)["own_us"] == 30  # aten's and torch's kernels stay out


def test_a_do_nothing_launch_beside_library_work_is_a_small_share():
    spans = [Span("aten::matmul", 0, 1000), Span("aten::mm", 5, 995), Span(f"{TRITON} nothing", 1100, 1130)]
    work = [Work("nvjet_tst_128x64_64x8_1x2_h_bz_TNT", 1500.0, at=500), Work("nothing", 2.0, at=1115)]
    got = split(work, spans, Owners(triton=frozenset({"nothing"})), kernels=True)
    assert got["share"] == pytest.approx(2 / 1502) and got["share"] < verdicts.OWN_SHARE_MIN


def test_in_the_interpreter_the_grid_is_the_kernel_and_the_launch_machinery_neither_side():
    spans = [
        Span("aten::mm", 0, 4000),
        Span(f"{LAUNCH} epilogue", 4000, 6000),
        Span("aten::new_empty", 4010, 4020),  # copying arguments: machinery, though an aten operator
        Span(f"{TRITON} epilogue", 4500, 5500),
    ]
    work = kernel_share.host_work(spans, 0, 6500)
    assert sum(w.us for w in work) == 6500
    got = split(work, spans, Owners(), kernels=False)
    assert got["own_us"] == 1000 and got["total_us"] == 4000 + 1000 + 500  # the 500 us of Python after it
    assert got["own"] == ["triton epilogue: 1000 us"]
    # Its thread on a CPU for a tenth of the grid's wall time: the rest was another process's, on neither side.
    interrupted = split(work, spans, Owners(), kernels=False, cpu={spans[-1]: 0.1})
    assert interrupted["own_us"] == 100 and interrupted["total_us"] == 4600


def test_a_launch_that_raised_did_none_of_the_work():
    spans = [
        Span(f"{LAUNCH} broken", 0, 900),
        Span(f"{TRITON} broken", 100, 800),
        Span(FAILED, 850, 850),
        Span("aten::addcmul", 900, 1000),
    ]
    got = split(kernel_share.host_work(spans, 0, 1000), spans, Owners(), kernels=False)
    assert got["own_us"] == 0 and got["total_us"] == 100


def _event(name, start, end, activity, id=0, thread=1, device=DeviceType.CPU):
    return SimpleNamespace(
        name=name, time_range=Interval(start, end), activity_type=activity, id=id, thread=thread, device_type=device
    )


def test_cuda_events_place_each_kernel_at_its_launch_by_correlation_id():
    events = [
        _event(kernel_marks.CALL, 0, 1000, "user_annotation"),
        _event("aten::mm", 10, 200, "cpu_op", id=1),
        _event("cudaLaunchKernel", 50, 60, "cuda_runtime", id=77),
        _event(f"{TRITON} bias_relu", 300, 400, "user_annotation", id=2),
        _event("cuLaunchKernel", 350, 360, "cuda_driver", id=78),
        _event("aten::add", 340, 370, "cpu_op", id=3, thread=2),  # another thread's operator: not around the launch
        _event("nvjet_tst_gemm", 100, 900, "kernel", id=77, device=DeviceType.CUDA),
        _event("bias_relu", 910, 950, "kernel", id=78, device=DeviceType.CUDA),
        _event("bias_relu", 1200, 1240, "kernel", id=79, device=DeviceType.CUDA),  # no launch here: by its name
    ]
    got = kernel_share.summary(events, "cuda", Owners(triton=frozenset({"bias_relu"})))
    assert got["time"] == "device" and got["own_us"] == 80 and got["total_us"] == 880
    assert kernel_share.summary(events, "cuda", Owners())["own_us"] == 40  # marked, though never named


def test_the_cpu_profile_of_a_call_splits_its_host_time_between_extension_calls_and_torch():
    """The real profiler on the CPU: a marked extension call's own time, aten inside it and outside it the library's."""
    fake = types.ModuleType("fake_extension")
    fake.sleep, fake.mm = time.sleep, torch.mm
    kernel_marks.extension(fake)
    a = torch.randn(512, 512)

    def call():
        fake.sleep(0.02)  # an extension function doing its own work
        return fake.mm(a, a) + torch.mm(a, a)  # aten inside an extension call is still aten's

    out, got = kernel_share.profiled(call, "cpu", lambda: None)
    assert torch.allclose(out, 2 * a @ a, rtol=1e-4, atol=1e-3)
    assert got["time"] == "host" and got["own_us"] >= 20_000
    assert got["own"][0].startswith("extension fake_extension.sleep")
    assert any(name.startswith("aten::mm") for name in got["library"])
    assert 0 < got["share"] < 1


# --- The judge's rule ---


def _judged(shares, device="cuda", kinds=("benchmark",), static=False):
    result = EvalResult(status="correct", device=device)
    result.shapes = [ShapeResult(name=f"s{k}", kind=kind) for k, kind in enumerate(kinds)]
    if static:
        result.flag("no_custom_kernel", "no custom kernel: ModelNew is the reference Model itself")
    verdicts.judge_evidence(result, shares)
    return result


def _share(share, total=1000.0):
    return {"share": share, "own_us": share * total, "total_us": total, "library": ["aten::mm: 990 us"]}


def test_under_one_percent_is_flagged_with_the_measured_share():
    result = _judged([_share(0.002)])
    assert result.own_kernel_share == 0.002 and [f.code for f in result.flags] == ["no_custom_kernel"]
    text = result.flags[0].text
    assert "0.20% of the device time" in text and "at shape s0" in text and "aten::mm" in text
    assert not _judged([_share(0.03)]).flags  # a fused epilogue's few percent


def test_the_least_benchmark_shape_decides_and_a_test_shape_does_not():
    result = _judged([_share(0.5), _share(0.004), _share(0.0)], kinds=("benchmark", "benchmark", "test"))
    assert result.own_kernel_share == 0.004 and [s.own_kernel_share for s in result.shapes] == [0.5, 0.004, 0.0]
    assert "at shape s1" in result.flags[0].text


def test_without_a_measurement_the_flag_stands():
    # The counts the rule used to fall back on are data in the candidate's process: a candidate that spoiled its
    # profile and set its launch counter to 1 cleared the flag.
    spoiled = _judged([{"error": "the profiler did not start"}])
    assert [f.code for f in spoiled.flags] == ["no_custom_kernel"] and "could be split" in spoiled.flags[0].text
    unmeasured = _judged([None, {"share": float("nan"), "own_us": 0, "total_us": 5}], kinds=("benchmark", "test"))
    assert unmeasured.own_kernel_share is None and [f.code for f in unmeasured.flags] == ["no_custom_kernel"]


def test_the_static_flag_stays_and_the_share_is_still_reported():
    result = _judged([_share(0.0)], static=True)
    assert [f.text for f in result.flags] == ["no custom kernel: ModelNew is the reference Model itself"]
    assert result.own_kernel_share == 0.0


# --- Evaluations ---


def _evaluate(problem, name, device, cache_dir):
    options = EvalOptions(timing=False, timeout_s=60, cache_dir=cache_dir)
    result = evaluate(str(problem), candidate(name), device, options)
    assert result.status == "correct", result.message
    return result


def _flag(result) -> str | None:
    return next((f.text for f in result.flags if f.code == "no_custom_kernel"), None)


DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


@pytest.mark.parametrize("device", DEVICES)
def test_pure_pytorch_is_flagged(device, cache_dir):
    result = _evaluate(PROBLEM, "torch_only", device, cache_dir)
    assert result.own_kernel_share == 0.0
    assert "did 0.00% of the" in _flag(result)


@pytest.mark.parametrize("device", DEVICES)
def test_pytorch_beside_a_launch_that_does_nothing_is_flagged_with_its_share(device, cache_dir):
    result = _evaluate(MATMUL, "matmul_noop_launch", device, cache_dir)
    assert 0 < result.own_kernel_share < verdicts.OWN_SHARE_MIN
    assert f"did {result.own_kernel_share:.2%} of the" in _flag(result)


@pytest.mark.parametrize("device", DEVICES)
def test_an_honest_triton_kernel_does_nearly_all_the_work(device, cache_dir):
    result = _evaluate(PROBLEM, "good_triton", device, cache_dir)
    assert _flag(result) is None
    # On the CPU the split is of the interpreter's host time, and the full suite's load moves it (0.70 and 0.37 on the
    # 2-core machine): there it need only stand far above the flag's floor.
    assert result.own_kernel_share > (0.5 if device == "cuda" else 10 * verdicts.OWN_SHARE_MIN)


@pytest.mark.parametrize("device", DEVICES)
def test_a_library_matmul_with_its_own_fused_epilogue_is_not_flagged(device, cache_dir):
    result = _evaluate(MATMUL, "matmul_epilogue", device, cache_dir)
    assert _flag(result) is None
    assert result.own_kernel_share >= verdicts.OWN_SHARE_MIN
    if device == "cuda":
        assert result.own_kernel_share < 0.5  # the product is the library's, and most of the work
