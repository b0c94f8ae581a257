"""Findings: one line per experiment on what its measured outcome teaches, written from the numbers and the plan.

Deterministic on purpose, not an LLM call: a finding restates what was measured (status, change over the parent
against the plan's expected range, the roofline bound, per-shape direction, anti-cheat verdicts, where the figure
holds the calls' host time) and draws the lesson that follows from it for the plan's own mechanism (held, held less
than planned, did not touch the bottleneck, cost time), naming what was borrowed from the reference. So it cannot
invent an outcome, costs nothing, replays identically and is bounded in length. The selector and the designer read
these lines.

`finding_for(record, parent) -> str`, e.g. "c0005 'SiLU through exp2': no gain (+0%) over c0002, below its
expected 1.02-1.08x; lesson: 'exp2 saves a multiply' did not move what limits this kernel; the kernel is memory
bound at 81% of roofline."
"""

from __future__ import annotations

from agents.population import shape_speedups, within_noise
from agents.text import clip
from kernels.archive import CandidateRecord
from kernels.speedup import format_speedup

FLAT = 0.02  # changes within 2% are noise for the designer's purposes
TITLE_CHARS = 56
MESSAGE_CHARS = 90
MECHANISM_CHARS = 80
FAILURE_LESSON = {
    "compile_error": "the idea is untested, not refuted",
    "runtime_error": "the idea is untested, not refuted",
    "incorrect": "the change broke the numerics",
    "timeout": "the kernel hung or ran far too long",
    "does_not_fit": "the problem did not fit in the device's memory: the idea is untested, not refuted",
    "off_anchor": "its edits strayed from the plan's anchors and it was never evaluated",
}


def _bottleneck(record: CandidateRecord) -> str:
    roofline = record.eval.get("roofline") or {}
    bound, fraction = roofline.get("bound"), roofline.get("fraction")
    if bound is None or fraction is None:
        return ""
    return f"the kernel is {bound} bound at {fraction * 100:.0f}% of roofline"


def _against_expected(ratio: float, experiment: dict) -> str:
    low, high = experiment.get("expected_speedup_min"), experiment.get("expected_speedup_max")
    if low is None or high is None:
        return ""
    where = "below" if ratio < low else "above" if ratio > high else "within"
    return f"{where} its expected {low:g}-{high:g}x"


def _shape_split(record: CandidateRecord, parent: CandidateRecord) -> str:
    mine, theirs = shape_speedups(record), shape_speedups(parent)
    changes = {name: mine[name] / theirs[name] - 1 for name in mine if theirs.get(name)}
    if not changes:
        return ""
    best, worst = max(changes, key=changes.get), min(changes, key=changes.get)
    if changes[best] > FLAT and changes[worst] < -FLAT:
        return f"faster on {best} ({changes[best] * 100:+.0f}%), slower on {worst} ({changes[worst] * 100:+.0f}%)"
    return ""


def _lesson(ratio: float, experiment: dict) -> str:
    """What the outcome says about the plan's mechanism."""
    mechanism = f"'{clip(experiment.get('mechanism'), MECHANISM_CHARS)}'" if experiment.get("mechanism") else "the idea"
    low = experiment.get("expected_speedup_min")
    if ratio - 1 > FLAT:
        held = "held, less than planned" if low is not None and ratio < low else "held here: build on it"
        return f"lesson: {mechanism} {held}"
    if ratio - 1 < -FLAT:
        return f"lesson: {mechanism} costs time here; do not repeat it unchanged"
    return f"lesson: {mechanism} did not move what limits this kernel"


def _host_time(record: CandidateRecord) -> str:
    """Where its figure holds host time per call: a kernel fast on the device can still read slow, and why."""
    codes = {flag.get("code") for flag in record.measured.get("flags") or [] if isinstance(flag, dict)}
    if "timing_disputed" in codes:
        return (
            "timed by the evaluator's own clock, which counts its calls' host time (launches, Python per call) "
            "beyond the reference's: fewer launches or less host work per call would show"
        )
    if "host_bound" in codes:
        return "its calls take longer to issue on the host than the device takes to run them"
    return ""


def _borrowed(record: CandidateRecord) -> str:
    taken = (record.experiment or {}).get("from_reference")
    return f"; it borrowed from {record.reference_id}: {clip(taken, MECHANISM_CHARS)}" if taken else ""


def finding_for(record: CandidateRecord, parent: CandidateRecord | None) -> str:
    """What this experiment's outcome teaches, from its measurement and its parent's."""
    experiment = record.experiment or {}
    head = f"{record.id} '{clip(experiment.get('title'), TITLE_CHARS)}'"
    rounds = f" after {record.debug_attempts} debugger rounds" if record.debug_attempts else ""
    strayed = "; its edits strayed outside the plan's anchors" if "outside the plan's anchors" in record.note else ""
    if record.status != "correct":
        message = clip(record.eval.get("message") or record.note, MESSAGE_CHARS)
        lesson = FAILURE_LESSON.get(record.status, "it failed")
        return f"{head}: {record.status}{rounds} ({message}); {lesson}{strayed}."
    if record.set_aside:
        reason = clip(record.set_aside, MESSAGE_CHARS)
        return (
            f"{head}: {format_speedup(record.speedup or 0)} claimed, SET ASIDE by the evaluator ({reason}); its speed "
            f"is not trusted, do not build on it{strayed}."
        )
    if record.cleared_by_strict:
        strayed = f", cleared by a strict re-evaluation{strayed}"
    if parent is None or not parent.speedup or record.speedup is None:
        return f"{head}: correct, {format_speedup(record.speedup or 0)}; no parent measurement to compare{strayed}."
    ratio = record.speedup / parent.speedup
    change = f"{(ratio - 1) * 100:+.0f}%"
    speeds = f"{format_speedup(parent.speedup)} -> {format_speedup(record.speedup)}"
    # A rise with no noise band measured is no evidence of a gain (agents/population.gain_over), nor of a mechanism.
    unbanded = ratio - 1 > FLAT and not record.measured.get("speedup_band")
    if within_noise(record, parent.speedup):
        verdict = f"within noise ({change}) of {parent.id}: {parent.id}'s figure lies inside this one's noise band"
    elif unbanded:
        verdict = f"{change} over {parent.id} ({speeds}) with no noise band measured: not counted as a gain"
    elif ratio - 1 > FLAT:
        verdict = f"gained {change} over {parent.id} ({speeds})"
    elif ratio - 1 < -FLAT:
        verdict = f"regressed {change} against {parent.id} ({speeds})"
    else:
        verdict = f"no gain ({change}) over {parent.id}"
    expected = f", {_against_expected(ratio, experiment)}" if _against_expected(ratio, experiment) else ""
    moved = 1.0 if unbanded or within_noise(record, parent.speedup) else ratio  # noise teaches no mechanism
    clauses = [_lesson(moved, experiment), _shape_split(record, parent), _bottleneck(record), _host_time(record)]
    clauses = [c for c in clauses if c]
    return f"{head}: {verdict}{expected}{''.join('; ' + c for c in clauses)}{_borrowed(record)}{strayed}."
