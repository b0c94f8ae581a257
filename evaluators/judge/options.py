"""EvalOptions: the knobs of one evaluation, with environment-variable fallbacks where a machine differs."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, Field

from evaluators.judge.process_options import DEFAULTS, default_cache_dir, pid_namespace_from_env


def _env_float(name: str) -> float | None:
    value = os.environ.get(name)
    return float(value) if value else None


class EvalOptions(BaseModel):
    """How to check and time one candidate; defaults suit the graph's loop."""

    trials: int = Field(3, ge=3, description="correctness trials, each on fresh inputs from its own seed")
    seed: int = Field(42, description="the parameters' seed (both sides build their modules from it)")
    trial_seed: int | None = Field(
        None,
        description="base seed of the correctness trials (trial i uses trial_seed + 1000 * (i + 1)); None: the parent "
        "draws one per evaluation and records it in the result, so no candidate can be written for its inputs",
    )
    timing: bool = Field(True, description="time candidate and reference once the candidate is correct")
    warmup_ms: float = Field(25.0, description="GPU warm-up budget before timing")
    # Each repetition also draws fresh inputs and flushes the cache (harness work of about a kernel's length for
    # small kernels), so the budget counts kernel time only and the repetitions are capped: with several
    # benchmark shapes per problem, 200 ms and 2000 repetitions made timing most of an 8-10 s evaluation.
    rep_ms: float = Field(100.0, description="GPU timing budget (do_bench's default); sets the repetition count")
    min_reps: int = Field(20, ge=3)
    max_reps: int = Field(500, ge=3)
    cpu_reps: int = Field(3, ge=1, description="repetitions under Triton's interpreter (slow; labelled so)")
    pin_timing: bool = Field(
        True, description="time the reference and the candidate on one CPU core next to the GPU (equal launch speed)"
    )
    flush_mb: int | None = Field(
        None, ge=1, description="cache-flush buffer (MB); unset: twice the GPU's L2 (worker/timing.flush_size)"
    )
    timeout_s: float = Field(
        DEFAULTS["timeout_s"], gt=0, description="limit of each stage: startup, correctness, timing"
    )
    build_timeout_s: float = Field(
        DEFAULTS["build_timeout_s"], gt=0, description="limit of the build stage (autotuning, nvcc)"
    )
    lock_timeout_s: float = Field(
        DEFAULTS["lock_timeout_s"], gt=0, description="longest wait for the device's timing lock"
    )
    max_speedup: float = Field(10.0, description="speedups beyond this are flagged as suspicious")
    strict: bool = Field(False, description="a re-evaluation that checks every timed output, with more trials")
    retained: int = Field(
        32, ge=1, description="the most timed outputs a side holds at once: no timing block has more repetitions"
    )
    compile_baseline: bool = Field(
        False, description="also time torch.compile(reference) per benchmark shape and report the speedup over it"
    )
    peak_tflops: float | None = Field(default_factory=lambda: _env_float("KS_PEAK_TFLOPS"))
    peak_gbps: float | None = Field(default_factory=lambda: _env_float("KS_PEAK_GBPS"))
    atol: float | None = Field(None, description="overrides the problem's and the per-dtype tolerance")
    rtol: float | None = None
    output_cap_kb: int = Field(
        DEFAULTS["output_cap_kb"], description="how much of a worker's stdout/stderr is kept (head and tail)"
    )
    max_result_mb: int = Field(
        DEFAULTS["max_result_mb"], description="largest report, or output file of one trial, a worker may hand back"
    )
    cache_dir: Path = Field(default_factory=default_cache_dir)
    reference_cache: bool = Field(
        True, description="reuse the reference's shape sizes measured by an earlier process (to plan device memory)"
    )
    pid_namespace: bool | None = Field(
        default_factory=pid_namespace_from_env,
        description="run workers in their own PID namespace (own /proc); None: when `unshare` allows it",
    )
