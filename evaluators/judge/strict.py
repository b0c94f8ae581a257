"""The strict re-evaluation's rule: which results get one, what it runs with, and what the two runs add up to.

One strict re-evaluation (timed as the first is, every output it holds checked, more trials, its reference and its
candidate in processes other than the first's) is due for a correct result set aside only by hard flags it may clear
(`flags.strict_can_clear`), and for a significant change to confirm: a run's band sees only its own two processes, and
the same kernel can run up to 38 % apart in two (docs/BENCHMARKS.md). The graph confirms every significant gain of a
candidate nothing set aside, since the bar it is weighed against (the best so far, a parent) may be anywhere; a suite
confirms every significant gain (fast_p weighs it against 1 and 2) and every significant slowdown within PROCESS_REACH
of no change, unless a hard flag other than `no_custom_kernel` set it aside. Only a strict run that is correct and not
set aside clears a flagged first or confirms an unflagged one; then the two count together (`kernels.archive.two_runs`:
the figures of the run with the lesser speedup, every band spanning both runs'). Otherwise the candidate is set aside,
and the reason says what the strict run found.

Two runs can still agree on a change two processes made: both pairs of processes can read apart the same way (what
sets the state each meets is not known). So every change the two runs confirm is weighed against a control: the
reference judged as its own candidate, strictly, in processes of its own (control_due). How far the control's band
reaches from no change is how far two processes of this problem read apart here, and every band of the two runs is
widened by that much on each side (`process_spread`): each band by its own problem's spread, and none where the
reference shows none. Weighed against the bars a change is read against (1 and 2 for fast_p, the best so far in the
graph), a spread from an offset near 1.0 matters far from it too, so no gain escapes its control by being large. A
control that could not be judged vouches for nothing: the bands are widened to hold no change.

A control can also miss the offset: on two H200s at 4189e8d level2/77's reference, judged as itself, ran 6.43-6.45 ms in
the reference's process of both runs and 4.93-4.95 ms in the candidate's, and 4.92-4.93 ms in both of its control's.
The control's two processes run the reference's code alone, so their times are readings of the reference no candidate
touched; where the reference's own time in the candidate's runs strays from them, the bands are widened by that drift
as well (`reference_drift`, a factor on the spread). A candidate whose runs find the reference slow, by chance or by its
doing, gains nothing by it. A candidate that is the reference itself (`static.is_alias`) runs the reference's code
too, so its own times are weighed as the reference's are: on one H200 at 6efb49f, level2/77's identity candidate ran
4.89-5.04 ms in its processes, its reference 6.37-6.42 ms, and the control 6.41-6.43 ms in both of its own, and the
row read a significant 1.26x beside a control that saw 2.2 % between two processes.
The graph's quarantine and the evaluate-only batch both decide by these functions; where the evaluation runs is theirs
to choose.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from evaluators.judge.flags import strict_can_clear, timing_stands
from evaluators.judge.options import EvalOptions
from evaluators.judge.result import EvalResult, ShapeResult
from evaluators.judge.static import is_alias
from evaluators.judge.timing_plan import is_duration
from kernels.archive import two_runs

STRICT_TRIALS = 5  # the loop's and the batch's evaluations run 3 correctness trials by default


def strict_options(options: EvalOptions | None = None) -> EvalOptions:
    """The first evaluation's options, made strict, with at least STRICT_TRIALS correctness trials."""
    first = options or EvalOptions()
    return first.model_copy(update={"strict": True, "trials": max(first.trials, STRICT_TRIALS)})


# The most two processes were seen to move one call (the same cuDNN kernel 1.38x apart, bench/probes/memory_state.py):
# a slowdown whose band ends farther from no change than this cannot be the processes' doing.
PROCESS_REACH = 1.4


def recheck_due(first: EvalResult, every_change: bool = False) -> bool:
    """Whether `first` gets one strict run: set aside only by flags it may clear, or a significant change to confirm.

    Confirmed: a gain of a candidate nothing set aside, or with `every_change` (a suite's) any significant gain and a
    slowdown within PROCESS_REACH of no change where every hard flag leaves the timing as it stands (a reference judged
    as itself, `no_custom_kernel`); a candidate that rewrote the problem gets no second run.
    """
    if first.status != "correct":
        return False
    if _clearable(first):
        return True
    if not first.significant or first.speedup_band is None:
        return False
    low, high = first.speedup_band
    if not every_change:
        return low > 1.0 and not first.set_aside
    return timing_stands(first.flags) and (low > 1.0 or high > 1 / PROCESS_REACH)


def control_due(first: EvalResult, strict: EvalResult | None, every_change: bool = False) -> bool:
    """Whether `first` and its `strict` run, counted together, still show a gain, or a slowdown within PROCESS_REACH.

    Only a change the two runs confirmed and whose timing stands (a set-aside row's only where it set aside for good,
    as recheck_due has it) is weighed against a control.
    """
    return strict is not None and _weighed(first, strict, _standing(first, strict).measured, every_change)


def _weighed(first: EvalResult, strict: EvalResult, measured: EvalResult, every_change: bool) -> bool:
    """control_due, given what the two runs count as together (`measured`, from _standing)."""
    if not recheck_due(first, every_change):
        return False
    if not (strict.strict and strict.status == "correct" and (not strict.set_aside or timing_stands(strict.flags))):
        return False
    if not measured.significant or measured.speedup_band is None:
        return False
    low, high = measured.speedup_band
    return low > 1.0 or high > 1 / PROCESS_REACH  # a slowdown beyond reach: no two processes made it


def process_spread(control: EvalResult | None) -> float | None:
    """How far two processes of the problem read apart (>= 1): the far end of the control's band from no change.

    None where the control has no band to read it from (it failed, or could not be timed).
    """
    band = control.speedup_band if control is not None and control.status == "correct" else None
    if band is None or not (all(math.isfinite(end) and end > 0 for end in band) and band[0] <= band[1]):
        return None
    return max(1.0, band[1], 1 / band[0])


def reference_drift(runs: list[EvalResult | None], control: EvalResult | None) -> float:
    """How far the reference's time in `runs` strays from the control's readings of it (>= 1), shape by shape.

    The control's readings of a shape are both its sides' medians (each the reference's code), and so are a run's
    baseline and, where the candidate is the reference itself (static.is_alias), its runtime. Only runs on the
    control's GPU model are compared: another model's times say nothing of this one's processes.
    """
    if control is None or control.status != "correct":
        return 1.0
    readings = {
        shape.name: [t for t in (shape.baseline_ms, shape.runtime_ms) if _reading(t)] for shape in control.shapes
    }
    drift = 1.0
    for run in runs:
        if run is None or run.status != "correct" or _gpu_model(run.gpu) != _gpu_model(control.gpu):
            continue
        alias = any(is_alias(flag.code, flag.text) for flag in run.flags)
        for shape in run.shapes:
            ours = readings.get(shape.name)
            theirs = [shape.baseline_ms] + ([shape.runtime_ms] if alias else [])
            for reading in (t for t in theirs if ours and _reading(t)):
                drift = max(drift, reading / max(ours), min(ours) / reading)
    return drift


def _reading(value) -> bool:
    """A time to divide by: a duration (timing_plan.is_duration, the rule for every figure a worker sends) above 0."""
    return is_duration(value) and value > 0


def _gpu_model(gpu: str) -> str:
    """The GPU's model, whichever of its cards ran: "NVIDIA H200" of "NVIDIA H200 #3"."""
    return gpu.rsplit(" #", 1)[0]


def _holding_no_change(band: tuple[float, float] | None) -> float:
    """The widening that brings 1.0 inside `band`, and no less than PROCESS_REACH: what an unjudged control leaves."""
    if band is None:
        return PROCESS_REACH
    return max(PROCESS_REACH, band[0], 1 / band[1])


def widened(result: EvalResult, spread: float) -> EvalResult:
    """`result` with its band and each shape's widened by `spread` on each side, and its significance read again."""

    def wide(band):
        return None if band is None else (band[0] / spread, band[1] * spread)

    shapes = [
        ShapeResult.model_validate(shape.model_dump() | {"speedup_band": wide(shape.speedup_band)})
        for shape in result.shapes
    ]
    band = wide(result.speedup_band)
    significant = None if band is None else not band[0] <= 1.0 <= band[1]
    return result.model_copy(update={"speedup_band": band, "significant": significant, "shapes": shapes})


def _clearable(first: EvalResult) -> bool:
    return bool(first.set_aside) and strict_can_clear(first.flags)


def clears(first: EvalResult, strict: EvalResult | None) -> bool:
    """Whether `strict` clears `first`: set aside by flags it may clear, `first` has a strict, correct, clean run."""
    if strict is None or first.status != "correct" or not _clearable(first):
        return False
    return _holds(strict)


def _holds(strict: EvalResult) -> bool:
    return strict.strict and strict.status == "correct" and not strict.set_aside


@dataclass(frozen=True)
class Standing:
    """What a candidate's evaluations (the first, and the strict one if it ran) add up to."""

    measured: EvalResult  # the evaluation whose figures count: the first, or the two runs together (two_runs)
    set_aside: str | None  # why the measurement is not trusted (the first's hard flags and what the strict run found)
    cleared: bool  # a strict re-evaluation cleared the first
    rechecked: bool  # a strict re-evaluation ran
    spread: float | None = None  # how far two processes read apart, by the control, where one was weighed (>= 1)


def standing(first: EvalResult, strict: EvalResult | None = None, control: EvalResult | None = None) -> Standing:
    """The candidate's standing after its first evaluation and, where they ran, its strict run and the control.

    The two runs count together (two_runs) where the strict one cleared the first, or, both correct and neither
    flagged in a way a strict run may clear, wherever it ran (a suite's rows set aside for good still get their change
    confirmed); the flags decide the rest. Where a control is due (control_due), its process_spread widens the
    bands, multiplied by the reference's drift from it (reference_drift); until it has run (None), they stand as the
    two runs drew them, and the callers run it before they count.
    """
    held = _standing(first, strict)
    if control is None or strict is None or not _weighed(first, strict, held.measured, every_change=True):
        return held
    spread = process_spread(control) or _holding_no_change(held.measured.speedup_band)
    # Multiplied, not the larger: a candidate whose process reads within the control's spread could add to it a
    # slowdown of the reference's process no larger than that spread.
    spread *= reference_drift([first, strict], control)
    return Standing(widened(held.measured, spread), held.set_aside, held.cleared, held.rechecked, round(spread, 4))


def _standing(first: EvalResult, strict: EvalResult | None) -> Standing:
    if strict is None or first.status != "correct":
        return Standing(first, first.set_aside and _why(first, strict), False, strict is not None)
    cleared = clears(first, strict)
    measured = first
    if cleared or (strict.strict and strict.status == "correct" and not (_clearable(first) or _clearable(strict))):
        measured = EvalResult.model_validate(two_runs(first.model_dump(mode="json"), strict.model_dump(mode="json")))
    if first.set_aside:
        reason = None if cleared else _why(first, strict)
    else:  # a confirming run: it must hold as a clearing one does
        reason = None if _holds(strict) else _unconfirmed(strict)
    return Standing(measured=measured, set_aside=reason, cleared=cleared, rechecked=True)


def _unconfirmed(strict: EvalResult) -> str:
    if not strict.strict:
        return "its confirming re-evaluation was not strict"
    if strict.status != "correct":
        return f"its confirming strict re-evaluation: {strict.message or strict.status}"
    return f"its confirming strict re-evaluation: {strict.set_aside}"


def _why(first: EvalResult, strict: EvalResult | None) -> str:
    reason = first.set_aside
    if not strict_can_clear(first.flags):
        # A strict run still confirms its change (_standing): what it found beyond the first's flags is said too, a
        # dispute of the figures the row then carries above all.
        known = {flag.text for flag in first.flags}
        found = [f.text for f in (strict.flags if strict else []) if f.severity == "hard" and f.text not in known]
        also = f"; the strict re-evaluation: {'; '.join(found)}" if found else ""
        return f"{reason} (no strict re-evaluation clears this){also}"
    if strict is None:
        return reason
    if strict.status != "correct":
        return f"{reason}; the strict re-evaluation: {strict.message or strict.status}"
    if strict.set_aside:
        return f"{reason}; the strict re-evaluation: still {strict.set_aside}"
    return f"{reason}; the re-evaluation was not strict"
