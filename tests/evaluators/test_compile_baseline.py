"""The torch.compile baseline: timed in the reference's process when asked, reported beside the eager speedup."""

import math
from pathlib import Path

import pytest

from evaluators import EvalOptions, evaluate
from evaluators.judge import verdicts
from evaluators.judge.result import EvalResult, ShapeResult
from evaluators.judge.timing_plan import Block, ShapeTiming, Span
from evaluators.run import options_from, parse_args

GPUMODE = Path(__file__).parents[1] / "kernels" / "fixtures" / "gpumode"


def test_every_benchmark_shape_gets_a_speedup_over_torch_compile(cache_dir):
    # A GPU MODE reference is a plain function: torch.compile takes it as it takes a module.
    source = (GPUMODE / "submissions" / "row-scale.py").read_text()
    options = EvalOptions(cache_dir=cache_dir, compile_baseline=True, timeout_s=60)
    result = evaluate(str(GPUMODE / "problems" / "row-scale"), source, "cpu", options)
    assert result.status == "correct", result.message
    assert not result.compile_baseline_error
    timed = [s for s in result.shapes if s.kind == "benchmark"]
    assert len(timed) > 1 and all(s.compiled_ms > 0 for s in timed)
    for shape in timed:
        assert shape.speedup_vs_compile == pytest.approx(shape.compiled_ms / shape.runtime_ms)
    geomean = math.exp(sum(math.log(s.speedup_vs_compile) for s in timed) / len(timed))
    assert result.speedup_vs_compile == pytest.approx(geomean)
    assert "over torch.compile" in result.message
    assert all(s.compiled_ms is None for s in result.shapes if s.kind == "test")


def test_without_the_flag_nothing_is_compiled(run_cpu):
    result = run_cpu("torch_only", timing=True)
    assert result.status == "correct"
    assert result.speedup_vs_compile is None and result.compiled_ms is None
    assert "torch.compile" not in result.message


def _timed(compiled: dict | None) -> tuple:
    """One benchmark shape's timings as the parent saw them: 1 ms candidate, 2 ms reference, clocks that agree."""
    candidate = ShapeTiming(3, {"times_ms": [1.0] * 3}, Span(0.003, 3),
                            [Block(0, 3, 0, 0.003)])  # fmt: skip
    reference = ShapeTiming(3, {"times_ms": [2.0] * 3}, Span(0.006, 3),
                            [Block(0, 3, 0, 0.006)])  # fmt: skip
    reference.compiled = compiled
    return candidate, reference


def _judged(compiled_per_shape: list[dict | None]) -> EvalResult:
    result = EvalResult(status="correct", device="cpu")
    meta = {"shapes": [{"roofline": None, "dtype": "fp32"}] * len(compiled_per_shape), "device_name": "cpu"}
    for i, compiled in enumerate(compiled_per_shape):
        result.shapes.append(ShapeResult(name=f"s{i}", kind="benchmark", status="correct"))
        candidate, reference = _timed(compiled)
        assert verdicts.apply_shape_timing(result, i, candidate, reference, meta, EvalOptions())
    return verdicts.summarize(result, EvalOptions())


def test_a_compile_failure_is_reported_and_never_the_candidates():
    result = _judged([{"error": "BackendCompilerFailed: no C++ compiler"}])
    assert result.status == "correct" and result.speedup == pytest.approx(2.0)
    assert result.speedup_vs_compile is None
    assert "torch.compile failed: BackendCompilerFailed" in result.compile_baseline_error
    assert not result.flags


def test_no_geometric_mean_over_compile_when_a_shape_lacks_it():
    result = _judged([{"times_ms": [4.0] * 3}, {"error": "Unsupported: x"}])
    assert result.shapes[0].speedup_vs_compile == pytest.approx(4.0)
    assert result.speedup_vs_compile is None and result.compile_baseline_error


def test_the_geometric_mean_over_compile_is_over_every_shape():
    result = _judged([{"times_ms": [4.0] * 3}, {"times_ms": [1.0] * 3}])
    assert result.speedup_vs_compile == pytest.approx(math.sqrt(4.0 * 1.0))
    assert result.compiled_ms == pytest.approx(4.0)


def test_the_cli_flag_asks_for_it():
    assert options_from(parse_args(["--problem", "p", "--candidate", "c", "--compile-baseline"])).compile_baseline
    assert not options_from(parse_args(["--problem", "p", "--candidate", "c"])).compile_baseline
