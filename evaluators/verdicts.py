"""Turning what the workers reported into an EvalResult: status, one-line message, diagnostics, flags."""

from __future__ import annotations

import statistics

from evaluators.options import EvalOptions
from evaluators.result import EvalResult
from evaluators.roofline import device_peaks, roofline_report
from evaluators.sandbox import WorkerFailure
from evaluators.toolchain import device_kind
from evaluators.trials import trial_plan
from kernels.problem import ProblemError

# Seen from outside, one call may cost this much more than the worker's own clock says (launch, pipe latency).
WALL_ALLOWANCE_MS = {"cuda": 0.05, "cpu": 5.0}


def finish(result: EvalResult, status: str, message: str, diagnostics: str) -> EvalResult:
    """Set the verdict; the message stays one line."""
    result.status = status
    first = message.strip().splitlines()[0] if message.strip() else status
    result.message = first if len(first) <= 400 else first[:397] + "..."
    result.diagnostics = diagnostics.strip()
    return result


def from_failure(result: EvalResult, failure: WorkerFailure, stage_seconds: dict) -> EvalResult:
    """A killed or dead worker: timeout, or runtime_error for a crash (segfault, abort, os._exit)."""
    result.stages.update(stage_seconds)
    status = "timeout" if failure.kind == "timeout" else "runtime_error"
    return finish(result, status, f"{status}: {failure.message}", _with_output("", failure.output))


def from_error(result: EvalResult, report: dict, output: str) -> EvalResult:
    """An exception the worker caught and reported."""
    if report["kind"] == "problem_error":
        raise ProblemError(report["message"].splitlines()[0])
    prefix = "unsupported on this device" if report.get("unsupported") else report["kind"]
    message = f"{prefix} in {report['stage']}: {report['message']}"
    return finish(result, report["kind"], message, _with_output(report["traceback"], output))


def check_correctness(result: EvalResult, outputs, expected, checked, options: EvalOptions, output: str) -> bool:
    """Walk the trials in order; at the first input modified in place or output mismatch, set `incorrect`."""
    plan = trial_plan(options.seed, options.trials)
    mismatches = checked.meta["trials"]
    for t, (seed, dist) in enumerate(plan):
        label = f"trial {t} (seed {seed}, {dist} inputs)" if expected.meta.get("dist_supported") else f"trial {t}"
        changed = outputs.meta["modified_inputs"].get(str(t), [])
        if changed:
            message = f"incorrect: {label}: the candidate modified input(s) {changed} in place"
            finish(result, "incorrect", message, _with_output(message, output))
            return False
        mismatch = mismatches[t]  # the reference stops after the first mismatch, so t never runs past it
        if mismatch:
            message = f"incorrect: {label}: {mismatch['summary']}"
            finish(result, "incorrect", message, _with_output(f"{message}\n{mismatch['details']}", output))
            return False
    return True


def apply_timing(result: EvalResult, timing, marks, reference, reference_marks, expected, timed, options) -> EvalResult:
    """Runtime, baseline, speedup, spread, roofline and the timing-related flags."""
    for k, mismatch in enumerate(timed.meta["trials"]):
        if mismatch:
            message = f"incorrect: output while timing on trial {k}'s inputs differs (replayed result?): "
            return finish(result, "incorrect", message + mismatch["summary"], mismatch["details"])
    device = device_kind(result.device)
    runtime, spread, notes = _measured(timing.meta, marks, device, "candidate")
    baseline, _, reference_notes = _measured(reference.meta, reference_marks, device, "reference")
    result.suspicious.extend(notes + reference_notes)
    result.runtime_ms, result.baseline_ms, result.spread = runtime, baseline, spread
    result.speedup = baseline / runtime if runtime > 0 else None
    result.timing = timing.meta["label"]
    result.reps = len(timing.meta["times_ms"])
    if result.speedup and result.speedup > options.max_speedup:
        result.suspicious.append(f"speedup {result.speedup:.1f}x is beyond the plausible {options.max_speedup:g}x")
    work = expected.meta.get("roofline")
    if work:
        peaks = device_peaks(expected.meta["device_name"]) if device == "cuda" else None
        result.roofline = roofline_report(
            work, expected.meta["dtype"], runtime, peaks, options.peak_tflops, options.peak_gbps
        )
        if result.roofline.fraction and result.roofline.fraction > 1.0:
            result.suspicious.append(f"faster than the roofline allows ({result.roofline.fraction:.0%} of the bound)")
    label = " (Triton interpreter timings, not GPU performance)" if result.timing == "interpreter" else ""
    summary = f"correct: {runtime:.4g} ms vs {baseline:.4g} ms reference, speedup {result.speedup:.3g}x{label}"
    return finish(result, "correct", summary, "")


def _measured(facts: dict, marks: dict, device: str, who: str) -> tuple[float, float, list[str]]:
    """Median (plus side-stream leftovers), interquartile spread, and flags from the wall-clock cross-check."""
    times = facts["times_ms"]
    median = statistics.median(times)
    q1, _, q3 = statistics.quantiles(times, n=4) if len(times) > 1 else (median, median, median)
    spread = (q3 - q1) / median if median > 0 else 0.0
    notes = []
    side = facts["side_stream_ms"]
    runtime = median + side
    if side > max(0.02, 0.05 * median):
        notes.append(f"{who}: work on other streams outlives the timed stream by {side:.3g} ms per call (counted)")
    if "wall:begin" in marks and "wall:end" in marks:
        wall = (marks["wall:end"] - marks["wall:begin"]) * 1e3 / facts["wall_calls"]
        if wall > 1.5 * runtime + WALL_ALLOWANCE_MS[device]:
            notes.append(
                f"{who}: its timer says {runtime:.4g} ms per call but the wall clock outside its process says "
                f"{wall:.4g} ms: timer patched? the wall-clock figure is used"
            )
            runtime = wall
    else:
        notes.append(f"{who}: no wall-clock window was reported; its timing could not be cross-checked")
    return runtime, spread, notes


def _with_output(text: str, output: str) -> str:
    output = output.strip()
    return f"{text}\n\nworker output (head and tail):\n{output}" if output else text
