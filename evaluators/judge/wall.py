"""The parent's clock as the outer truth of a timing: what the candidate's own timer may claim, and no less.

The parent times each timing command from sending it to having its reply. The reference ran the same routine with
the same repetition count in its own (trusted) process, so the difference of the two spans, spread over the
repetitions, is what the candidate's calls cost beyond the reference's: harness work (drawing inputs, flushing,
sketching, holding copies) and the pipe cancel out. Work hidden anywhere in the candidate's process while the
command runs (a patched timer, answers recomputed between repetitions, a stall) shows up in that span.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

# How far an honest candidate's timer may sit below the parent's figure: a share of the call, a share of the
# harness work per repetition (the flush and input draws vary from one run to the next), and a fixed jitter of
# the two processes' wake-ups spread over the repetitions.
CALL_SLACK, HARNESS_SLACK, JITTER_MS = 0.10, 0.05, 1.0


@dataclass
class Span:
    """One timing command seen from the parent: seconds from sending it to its reply, and its repetitions."""

    seconds: float
    reps: int


def parent_ms(candidate: Span, reference: Span, reference_times_ms: list[float]) -> float:
    """The candidate's mean milliseconds per call by the parent's clock, calibrated by the reference's command."""
    return (candidate.seconds - reference.seconds) * 1e3 / candidate.reps + statistics.fmean(reference_times_ms)


def harness_ms(reference: Span, reference_times_ms: list[float]) -> float:
    """The harness's own milliseconds per repetition, outside the timed calls (by the reference's command)."""
    return max(0.0, reference.seconds * 1e3 / reference.reps - statistics.fmean(reference_times_ms))


def slack_ms(parent: float, harness: float, reps: int) -> float:
    """How much lower than the parent's figure an honest timer's mean may be."""
    return CALL_SLACK * max(parent, 0.0) + HARNESS_SLACK * harness + JITTER_MS / reps
