"""Turning what the workers reported into an EvalResult: status, one-line message, diagnostics, flags."""

from __future__ import annotations

import math
import statistics

from evaluators.judge import bands, timing_plan, wall
from evaluators.judge.bands import RESOLUTION_MS
from evaluators.judge.options import EvalOptions
from evaluators.judge.process import WorkerFailure
from evaluators.judge.result import EvalResult, ShapeResult, WallCheck
from evaluators.judge.roofline import device_peaks, roofline_report
from evaluators.judge.timing_plan import is_duration, issue_median
from evaluators.judge.toolchain import device_kind
from kernels.problem_types import Shape


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


# What the candidate's worker may report of an exception. Its process is untrusted: a report is a verdict of these
# kinds and nothing else. A problem_error from the candidate's process is its runtime_error: the problem's own code
# fails in the reference's process too, which is where it is blamed on the problem.
REPORTED_KINDS = {"compile_error", "runtime_error"}


def from_error(result: EvalResult, report: dict, output: str) -> EvalResult:
    """An exception the candidate's worker caught and reported; a malformed report is itself a runtime_error."""
    fields = ("kind", "stage", "message", "traceback")
    if not (isinstance(report, dict) and all(isinstance(report.get(f), str) for f in fields)):
        return finish(result, "runtime_error", "runtime_error: the candidate process sent a malformed error report", "")
    kind = report["kind"] if report["kind"] in REPORTED_KINDS else "runtime_error"
    prefix = "unsupported on this device" if report.get("unsupported") is True else kind
    where = f" at shape {report['shape']}" if isinstance(report.get("shape"), str) and report["shape"] else ""
    message = f"{prefix} in {report['stage']}{where}: {report['message']}"
    return finish(result, kind, message, _with_output(report["traceback"], output))


def check_shape(result: EvalResult, shape: Shape, outputs, checked, plan, dist_supported: bool, output: str) -> bool:
    """Walk one shape's trials in order; at the first input modified in place or mismatch, set `incorrect`."""
    shape_result = ShapeResult(name=shape.name, kind=shape.kind, status="correct")
    result.shapes.append(shape_result)
    mismatches = checked.meta["checks"]
    for t, (seed, dist) in enumerate(plan):
        label = f"shape {shape.name}, trial {t}" + (f" (seed {seed}, {dist} inputs)" if dist_supported else "")
        changed = outputs.meta["modified_inputs"].get(str(t), [])
        if changed:
            message = f"incorrect: {label}: the candidate modified input(s) {changed} in place"
            _fail_shape(result, shape_result, message, message, output)
            return False
        mismatch = mismatches[t] if t < len(mismatches) else None  # the reference stops at the first mismatch
        if mismatch:
            message = f"incorrect: {label}: {mismatch['summary']}"
            _fail_shape(result, shape_result, message, f"{message}\n{mismatch['details']}", output)
            return False
    return True


def _fail_shape(result: EvalResult, shape_result: ShapeResult, message: str, diagnostics: str, output: str) -> None:
    shape_result.status, shape_result.message = "incorrect", message
    finish(result, "incorrect", message, _with_output(diagnostics, output))


# The least share of a profiled call's device time (in the Triton interpreter, host time) that the candidate's own
# kernels must do at every benchmark shape (worker/kernel_share.py). Low, because honest work can be a small part of
# a call: an epilogue fused after a library GEMM (bias, activation) reads and writes the output once, a few percent
# of the GEMM's time. A kernel that does nothing takes a few microseconds, under 1 % of a call of over about 0.5 ms.
# Where the floor is cleared by a token kernel (short calls), the token costs at least 1 % of the runtime.
OWN_SHARE_MIN = 0.01


def judge_evidence(result: EvalResult, shares: list | None = None) -> None:
    """`no_custom_kernel` when the candidate's own kernels did under OWN_SHARE_MIN of a profiled call's time.

    `shares`: the candidate worker's kernel_share reply per shape, in the order of `result.shapes`. The least share
    over the benchmark shapes (the timed ones, whose speedup is reported; a test shape may fall back to PyTorch at
    an awkward size) is `own_kernel_share` and decides. Where no shape's time could be measured, the flag stands:
    the profile is made in the candidate's process, which can spoil it (rename the marks it is read by), and the
    launch counts it would fall back on are plain data there too (a red-team helper cleared the flag both ways).
    """
    shares = shares or []
    measured = []
    for shape, share in zip(result.shapes[-len(shares) :] if shares else [], shares, strict=False):
        if isinstance(share, dict) and _is_share(share.get("share")) and is_duration(share.get("own_us")):
            if is_duration(share.get("total_us")) and share["total_us"] > 0:
                shape.own_kernel_share = share["share"]
                measured.append((shape, share))
    timed = [m for m in measured if m[0].kind == "benchmark"] or measured
    least = min(timed, key=lambda m: m[1]["share"], default=None)
    if least:
        result.own_kernel_share = least[1]["share"]
    if any(flag.code == "no_custom_kernel" for flag in result.flags):
        return  # the static check already found the reference aliased
    if least:
        shape, share = least
        if share["share"] < OWN_SHARE_MIN:
            time = "device time" if device_kind(result.device) == "cuda" else "host time (Triton interpreter)"
            library = share.get("library")
            most = library[0] if isinstance(library, list) and library and isinstance(library[0], str) else ""
            result.flag(
                "no_custom_kernel",
                f"no custom kernel: its own kernels (Triton launches, extensions it built or loaded) did "
                f"{share['share']:.2%} of the {time} of a profiled call at shape {shape.name} "
                f"({share['own_us']:.4g} of {share['total_us']:.4g} us), under the {OWN_SHARE_MIN:.0%} floor"
                + (f"; the most went to {most[:120]}" if most else ""),
            )
        return
    result.flag(
        "no_custom_kernel",
        "no custom kernel: no profiled call's time could be split between its own kernels and the library's (no "
        "device work, or a profile that could not be read), so nothing shows that it did the work itself",
    )


def _is_share(value) -> bool:
    return type(value) in (int, float) and 0.0 <= value <= 1.0


def apply_shape_timing(result: EvalResult, index: int, timing, reference, meta, options) -> bool:
    """One benchmark shape's runtime, baseline, speedup and roofline; a timed output that mismatches is incorrect.

    `timing` and `reference` are the candidate's and the reference's ShapeTiming at the shape (judge/timing_plan.py);
    the candidate's carries the reference's check of the timed repetitions the parent picked from each block.
    """
    shape_result = result.shapes[index]
    if timing.mismatch:
        rep, mismatch = timing.mismatch
        _fail_timed_rep(result, shape_result, rep, mismatch["summary"], mismatch["details"])
        return False
    device = device_kind(result.device)
    reps_for = timing_plan.honest_reps(result.device, options)
    reference_clock = wall.judge_timing(reference, reference, reps_for, device)
    baseline = max(wall.reported_ms(reference), floor_ms(reference_clock), RESOLUTION_MS)
    clock = wall.judge_timing(timing, reference, reps_for, device)
    runtime = wall.reported_ms(timing, clock.counted)  # as the claim the parent bounds: with the watched work
    spread = median_and_spread(timing.facts["times_ms"])[1]
    _flag_left_running(result, shape_result.name, clock.counted, runtime)
    side = wall.side_stream_counted(timing.side_stream_ms, reference.side_stream_ms, runtime)
    if _past_side_stream_bar(side, runtime):
        result.flag(
            "side_stream",
            f"shape {shape_result.name}: work on other streams outlives the timed stream by "
            f"{side:.3g} ms per call (counted)",
        )
    runtime += side
    _flag_left_behind(result, shape_result.name, timing)
    _flag_unwatched(result, shape_result.name, timing)
    if device == "cuda" and clock.disputed:
        result.flag(
            "timing_disputed",
            f"shape {shape_result.name}: its process says {clock.claimed_ms:.4g} ms per call, the parent's clock "
            f"around the timing says {clock.parent_ms:.4g} ms (beyond {clock.slack_ms:.3g} ms of noise), twice, "
            + (
                "the second time with no worker starting or loading kernels on the machine's other GPUs"
                if timing.host_held
                else "the second time without the host's timing lock (another process kept it)"
            )
            + ": the parent's figure is used, which counts the calls' host work beyond the reference's (launches, "
            "Python per call) that the timer does not see",
        )
    runtime = max(runtime, floor_ms(clock), RESOLUTION_MS)
    issued = issue_median(timing.facts.get("issue_ms"), timing.reps)
    host_bound = issued is not None and issued > runtime
    if device == "cuda" and host_bound:
        result.flag(
            "host_bound",
            f"shape {shape_result.name}: each call takes {issued:.3g} ms to issue on the host, longer than the "
            f"{runtime:.3g} ms it runs on the device. The figure is the device's: the timing holds the stream until "
            "the launches are queued. Called back to back, the calls would go at the host's pace; fewer launches "
            "would help",
        )
    shape_result.runtime_ms, shape_result.baseline_ms, shape_result.spread = runtime, baseline, spread
    shape_result.speedup = baseline / runtime
    shape_result.speedup_band, shape_result._band_draws = bands.shape_band(
        band_series(reference, reference_clock), band_series(timing, clock), shape_result.speedup
    )
    reference_issued = issue_median(reference.facts.get("issue_ms"), reference.reps)
    shape_result.wall = WallCheck(
        parent_ms=clock.parent_ms,
        claimed_ms=clock.claimed_ms,
        slack_ms=clock.slack_ms,
        issue_ms=issued,
        reference_issue_ms=reference_issued,
        command_ms=reference.fixed_s * 1e3,
        ping_ms=reference.floor_s * 1e3,
        harness_ms=clock.harness_ms,
        seal_ms=clock.seal_ms,
        seal_excess_ms=clock.seal_excess_ms,
        pin_ms=clock.pin_ms,
        pin_excess_ms=clock.pin_excess_ms,
        open_ms=clock.open_ms,
        watch_ms=clock.watch_ms,
        watch_excess_ms=clock.watch_excess_ms,
    )
    host_bound = host_bound or (reference_issued is not None and reference_issued > baseline)
    speeds = host_speed_ratio(timing, reference)
    if device == "cuda" and host_bound and speeds and shape_result._band_draws:
        shape_result.speedup_band, shape_result._band_draws = bands.across_processes(shape_result._band_draws, speeds)
        shape_result.host_speed_ratio = speeds
    if device == "cuda" and shape_result._band_draws:
        shape_result.band_within = shape_result.speedup_band
        floor = shape_result.process_floor = bands.process_floor(reference_issued, baseline)
        shape_result.speedup_band, shape_result._band_draws = bands.with_process_floor(
            shape_result._band_draws, shape_result.speedup, floor
        )
    _apply_compiled(result, shape_result, reference.compiled, runtime)
    shape_result.reps = len(timing.facts["times_ms"])
    result.timing = "interpreter" if device == "cpu" else "cuda-events"
    work, dtype = meta["shapes"][index]["roofline"], meta["shapes"][index]["dtype"]
    if work:
        peaks = device_peaks(meta["device_name"]) if device == "cuda" else None
        roof = roofline_report(work, dtype, runtime, peaks, options.peak_tflops, options.peak_gbps)
        shape_result.roofline, shape_result.roofline_fraction = roof, roof.fraction
    return True


def floor_ms(clock: wall.Verdict) -> float:
    """What the parent's clock lets a side report at least: its own figure, where the side's timer is disputed.

    One rule for the reference and the candidate, on every device; only the candidate is flagged for it (on CUDA: on
    the CPU interpreter timings are noise-bound, and no flag could tell a forger from the noise).
    """
    return clock.parent_ms if clock.disputed else 0.0


def host_speed_ratio(timing, reference) -> float | None:
    """The candidate's process's host time over the reference's for the same harness work before each repetition."""
    candidate = issue_median(timing.facts.get("prepare_ms"), timing.reps)
    ours = issue_median(reference.facts.get("prepare_ms"), reference.reps)
    return candidate / ours if candidate and ours else None


def band_series(side, clock: wall.Verdict) -> list[list[float]]:
    """The block series a side's figure came from: its own times, or the parent's per block where it was floored.

    Its own with the work the parent counted into them (`clock.counted`, wall.block_times). Each at least
    RESOLUTION_MS, as the figure is: a forged zero still draws finite ratios.
    """
    series = [[figure] for figure in clock.blocks_ms] if clock.disputed else wall.block_times(side, clock.counted)
    return [[max(t, RESOLUTION_MS) for t in block] for block in series]


def _fail_timed_rep(result: EvalResult, shape_result: ShapeResult, rep: int, why: str, details: str) -> None:
    message = (
        f"incorrect: shape {shape_result.name}, timed repetition {rep}: its output differs from the reference "
        f"on the inputs it was given (a replayed or cached result?): {why}"
    )
    _fail_shape(result, shape_result, message, f"{message}\n{details}" if details else message, "")


# Other work the reference's waits met over a shape: an honest candidate's calls are synchronized before it replies,
# so it leaves none; another process starting on the device may cost tens of ms. Past this, the candidate's work
# (each wait may last up to 2 s, worker/device_idle.py, and a shape has dozens) is what the evaluation pays for.
BUSY_MS = 500.0


def _past_side_stream_bar(ms: float, runtime: float) -> bool:
    """Whether work per call the candidate's timer did not see is enough to flag `side_stream`: 0.02 ms or 5 %."""
    return ms > max(0.02, 0.05 * runtime)


def _flag_left_running(result: EvalResult, shape: str, watched: list[float] | None, runtime: float) -> None:
    """Flag work the candidate left on the device through its blocks' host windows, past the side-stream bar.

    Counted into its times either way (wall.watch_counted_ms).
    """
    left = statistics.median(watched) if watched else 0.0
    if _past_side_stream_bar(left, runtime):
        result.flag("side_stream", f"shape {shape}: work it left on the device ran {left:.3g} ms per call through its "
                                   "blocks' handoffs, after its own timer stopped (counted)")  # fmt: skip


# The share of a shape's armed blocks whose mark may not come before the pin, unflagged. The figure is the median of
# the blocks' means: work hidden in fewer than half of them does not move it, and an honest mark always comes first
# (it is written before the reply, and the pin is sent after it).
MISSED_MARKS = 0.25


def _flag_unwatched(result: EvalResult, shape: str, timing: timing_plan.ShapeTiming) -> None:
    """Flag a shape where the reference's armed watch missed the candidate's mark of its block's end too often.

    Its watch then began at the pin (worker/window_watch.py): what the candidate left on the device from its last
    synchronize to the pin went unseen, as a candidate that never marks, or marks late, would have it.
    """
    armed = [block.pin["marked"] for block in timing.blocks if "marked" in (block.pin or {})]
    missed = sum(marked is not True for marked in armed)
    if armed and missed > MISSED_MARKS * len(armed):
        result.flag("unwatched", f"shape {shape}: the reference's watch missed the end of {missed} of its "
                                 f"{len(armed)} blocks (no mark of it came before the pin): work left on the device "
                                 "there went unseen")  # fmt: skip


def _flag_left_behind(result: EvalResult, shape: str, timing: timing_plan.ShapeTiming) -> None:
    """Flag what the candidate left to act in the reference's turns.

    Processes that ended while stopped (what they held was given back then), and work on the device that held the
    reference's waits past BUSY_MS.
    """
    if timing.ended_stopped:
        result.flag("side_stream", f"shape {shape}: {timing.ended_stopped} of its processes ended while stopped, "
                                   "giving back what they held during the reference's turn")  # fmt: skip
    if timing.busy_ms > BUSY_MS:
        result.flag("side_stream", f"shape {shape}: work it left on the device held the reference's waits for "
                                   f"{timing.busy_ms / 1e3:.2f} s")  # fmt: skip


def median_and_spread(times: list[float]) -> tuple[float, float]:
    """A timing's figure, the median, and its interquartile range over it."""
    median = statistics.median(times)
    q1, _, q3 = statistics.quantiles(times, n=4) if len(times) > 1 else (median, median, median)
    return median, (q3 - q1) / median if median > 0 else 0.0


def _apply_compiled(result: EvalResult, shape_result: ShapeResult, compiled: dict | None, runtime: float) -> None:
    """The torch.compile baseline at one shape, when it was asked for: its time and the speedup over it."""
    if compiled is None:
        return
    if "error" in compiled:
        result.compile_baseline_error = f"shape {shape_result.name}: torch.compile failed: {compiled['error']}"
        return
    # The reference's process measured it, so its median (plus side-stream work) needs no cross-check.
    compiled_ms = statistics.median(compiled["times_ms"])
    shape_result.compiled_ms = compiled_ms
    shape_result.speedup_vs_compile = compiled_ms / runtime if runtime > 0 else None


def summarize(result: EvalResult, options: EvalOptions) -> EvalResult:
    """The summary over benchmark shapes: geometric-mean speedup, the first shape's times, and the flags."""
    timed = [s for s in result.shapes if s.kind == "benchmark" and s.speedup]
    if not timed:  # every figure is floored above zero: this is a problem with no benchmark shape
        return finish(result, "correct", f"correct on {len(result.shapes)} shape(s) (no benchmark shape to time)", "")
    first = timed[0]
    result.speedup = math.exp(sum(math.log(s.speedup) for s in timed) / len(timed))
    result.runtime_ms, result.baseline_ms, result.spread = first.runtime_ms, first.baseline_ms, first.spread
    result.reps, result.roofline = first.reps, first.roofline
    over_compile = [s.speedup_vs_compile for s in timed if s.speedup_vs_compile]
    if over_compile and len(over_compile) == len(timed):  # a geometric mean over some shapes only would mislead
        result.speedup_vs_compile = math.exp(sum(map(math.log, over_compile)) / len(over_compile))
        result.compiled_ms = first.compiled_ms
    fastest = max(timed, key=lambda s: s.speedup)
    if fastest.speedup > options.max_speedup:
        where = f" at shape {fastest.name}" if len(timed) > 1 else ""
        result.flag(
            "beyond_plausible",
            f"speedup {fastest.speedup:.1f}x{where} is beyond the plausible {options.max_speedup:g}x",
        )
    for s in timed:
        if s.roofline_fraction and s.roofline_fraction > 1.0:
            result.flag(
                "beyond_roofline",
                f"shape {s.name}: faster than the roofline allows ({s.roofline_fraction:.0%} of the bound)",
            )
    label = " (Triton interpreter timings, not GPU performance)" if result.timing == "interpreter" else ""
    if len(timed) == 1:
        summary = (
            f"correct: {first.runtime_ms:.4g} ms vs {first.baseline_ms:.4g} ms reference, speedup {result.speedup:.3g}x"
        )
    else:
        summary = (
            f"correct on {len(result.shapes)} shapes: geometric-mean speedup {result.speedup:.3g}x "
            f"over {len(timed)} benchmark shapes"
        )
    draws = [s._band_draws for s in timed]
    if all(draws):
        result.speedup_band = bands.geomean_band(draws)
        result.significant = bands.significant(*result.speedup_band)
        low, high = result.speedup_band
        verdict = "" if result.significant else ": no significant change"
        summary += f" (95 % band {low:.3g}-{high:.3g}x{verdict})"
    if result.speedup_vs_compile:
        summary += f", {result.speedup_vs_compile:.3g}x over torch.compile"
    return finish(result, "correct", summary + label, "")


def _with_output(text: str, output: str) -> str:
    output = output.strip()
    return f"{text}\n\nworker output (head and tail):\n{output}" if output else text
