"""Adversarial and broken candidates, each with the verdict it deserves (CPU, Triton interpreter)."""

import os
import shutil

import pytest

from evaluators import EvalOptions, evaluate
from tests.evaluators.conftest import PROBLEM

# (candidate, status, a fragment of the one-line message, a fragment of some `suspicious` entry or None)
VERDICTS = [
    ("good_triton", "correct", "correct", None),
    ("torch_only", "correct", "correct", "no custom kernel"),
    ("torch_fallback", "correct", "correct", "try/except with a PyTorch fallback"),
    ("cache_across_calls", "incorrect", "trial 1 (seed ", None),
    ("modify_inputs", "incorrect", "modified input(s) [0] in place", None),
    ("steal_via_gc", "incorrect", "trial 0", "garbage collector"),
    ("steal_via_frames", "incorrect", "trial 0", "inspects interpreter frames"),
    ("patch_comparisons", "runtime_error", "HarnessTampering: the candidate replaced torch.", "torch.allclose"),
    ("wrong_shape", "incorrect", "shape (64, 8) found, (8, 64) expected", None),
    ("nan_output", "incorrect", "1 NaN and 0 Inf where the reference is finite (first at (1, 2))", None),
    ("off_by_tolerance", "incorrect", "beyond atol=0.0001 rtol=0.0001", None),
    ("syntax_error", "compile_error", "syntax error at line 7", None),
    ("no_modelnew", "compile_error", "does not define ModelNew at top level", None),
    ("import_error", "compile_error", "No module named 'kernel_helpers_that_do_not_exist'", None),
    ("raises", "runtime_error", "runtime_error in correctness at shape M=8 N=64: RuntimeError", None),
    ("segfault", "runtime_error", "killed by SIGSEGV", None),
    ("abort", "runtime_error", "killed by SIGABRT", None),
    ("os_exit", "runtime_error", "exited with status 0 before finishing", None),
    ("hang", "timeout", "correctness stage exceeded its 3 s limit", None),
    ("forge_report", "runtime_error", "the candidate process sent a", None),
    # Work done inside the harness, untimed: finishing deferred outputs as they are read, or precomputing answers
    # as inputs are drawn. Every function the harness calls after the candidate's import is watched.
    ("defer_to_detach", "runtime_error", "replaced Tensor.detach, which the harness relies on", "torch.Tensor.detach"),
    ("defer_to_save", "runtime_error", "replaced torch.save, which the harness relies on", "replaces torch.save"),
    ("defer_via_dispatch_mode", "runtime_error", "left torch mode(s) ['_FinishOnCopy'] active after its call", None),
    ("hook_get_inputs", "runtime_error", ".get_inputs, which the harness relies on between and after its calls", None),
    ("hook_torch_randn", "runtime_error", "replaced torch.randn, which the harness relies on", "replaces torch.<attr>"),
    ("hook_random", "runtime_error", "replaced random.Random, which the harness relies on", None),
    ("hook_manual_seed", "runtime_error", "replaced torch.random.manual_seed, which", "replaces torch.random"),
]


@pytest.mark.parametrize(("name", "status", "message", "flag"), VERDICTS, ids=[v[0] for v in VERDICTS])
def test_verdict(run_cpu, name, status, message, flag):
    result = run_cpu(name, timeout_s=3)
    assert result.status == status, result.message
    assert message in result.message
    if flag is None:
        assert not [s for s in result.suspicious if "no custom kernel" not in s]
    else:
        assert any(flag in s for s in result.suspicious), result.suspicious


def test_mismatch_diagnostics_name_trial_error_and_place(run_cpu):
    result = run_cpu("off_by_tolerance")
    # The seed is the one this evaluation drew, recorded in the result: the failing trial can be redone.
    assert f"trial 0 (seed {result.trial_seed + 1000}, normal inputs)" in result.diagnostics
    assert "worst at (" in result.diagnostics and "found" in result.diagnostics and "expected" in result.diagnostics


def test_flood_of_output_is_capped(run_cpu):
    result = run_cpu("flood_output", output_cap_kb=16)
    assert result.status == "runtime_error"
    assert "done flooding" in result.message
    assert "bytes of output dropped" in result.diagnostics
    assert len(result.diagnostics) < 64 * 1024


def test_environment_secrets_are_not_visible(run_cpu, monkeypatch):
    monkeypatch.setenv("GOOGLE_API_KEY", "fake-google-key-for-tests")
    monkeypatch.setenv("HF_TOKEN", "fake-hf-token")
    result = run_cpu("env_snoop")
    assert result.status == "correct", result.diagnostics
    assert "fake-google-key" not in result.diagnostics


def test_compile_error_carries_traceback(run_cpu):
    result = run_cpu("import_error")
    assert "Traceback" in result.diagnostics


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")


@needs_nvcc
def test_broken_cuda_source_is_a_compile_error_on_cpu(run_cpu):
    result = run_cpu("load_inline_cuda_broken", build_timeout_s=300)
    assert result.status == "compile_error", result.message
    assert "undeclared_shift" in result.diagnostics


@needs_nvcc
@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("KS_SLOW_TESTS"), reason="compiling torch headers with nvcc takes minutes")
def test_good_cuda_source_is_checked_then_reported_unsupported_on_cpu(run_cpu):
    result = run_cpu("load_inline_cuda", build_timeout_s=600)
    assert result.status == "runtime_error"
    assert result.message.startswith("unsupported on this device") and "compiles with nvcc" in result.message


@pytest.mark.parametrize("alias", ["ModelNew = Model", "class ModelNew(Model):\n    pass"], ids=["assign", "subclass"])
def test_the_reference_aliased_is_correct_and_set_aside_for_no_custom_kernel(cache_dir, alias):
    source = f"{PROBLEM.read_text()}\n\n{alias}\n"
    result = evaluate(str(PROBLEM), source, "cpu", EvalOptions(timing=False, timeout_s=10, cache_dir=cache_dir))
    assert result.status == "correct", result.message
    assert [flag.code for flag in result.flags] == ["no_custom_kernel"]
    assert result.set_aside == "no custom kernel: ModelNew is the reference Model itself"


def test_a_candidate_using_torch_compile_is_not_mistaken_for_tampering(run_cpu):
    result = run_cpu("uses_torch_compile", timeout_s=120)
    assert result.status == "correct", result.message


def test_torch_manual_seed_may_be_rebound_because_the_harness_never_calls_it(run_cpu):
    """Workers no longer import torch._dynamo at start-up, so its rebinding of torch.manual_seed is allowed."""
    result = run_cpu("rebinds_torch_manual_seed", timing=True, timeout_s=60)
    assert result.status == "correct", result.message


@pytest.mark.skipif(not os.path.exists("/proc/self/oom_score_adj"), reason="Linux only")
def test_a_worker_is_the_first_the_out_of_memory_killer_takes(run_cpu):
    # A candidate that eats all host memory dies itself; the run or batch that started it goes on.
    result = run_cpu("report_oom_score")
    assert result.status == "runtime_error" and "oom_score_adj 1000" in result.message, result.message
