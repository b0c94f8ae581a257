"""The parent's clock as the outer truth of a timing: what the candidate's own timer may claim, and no less.

The parent times each timing command from sending it to having its reply. The reference ran the same routine in
its own (trusted) process, in as many commands, and once more with no repetition (the fixed cost of a command:
the pipe, the flush buffer, the last sync), so what the harness costs per repetition (drawing inputs, flushing,
sketching, holding copies) is known apart from the reference's own calls; what is left of the candidate's span is
its calls. Work hidden anywhere in the candidate's process while the command runs (a patched timer, answers
recomputed between repetitions, a stall) shows up there.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

# How far an honest candidate's timer may sit below the parent's figure: a share of the call, a share of the
# harness work per repetition (the flush and input draws vary from one run to the next), and a fixed jitter of
# the two processes' wake-ups spread over the repetitions.
CALL_SLACK, HARNESS_SLACK, JITTER_MS = 0.10, 0.15, 1.0


@dataclass
class Span:
    """One side's timing commands seen from the parent: their repetitions, and how many commands they were.

    `seconds` is the sum of each command's span, from sending it to having its reply.
    """

    seconds: float
    reps: int
    commands: int = 1


def harness_ms(reference: Span, fixed_s: float, reference_times_ms: list[float]) -> float:
    """The harness's own milliseconds per repetition, outside the timed calls (by the reference's command).

    `fixed_s` is the reference's timing command with no repetition: the pipe, the flush buffer, the last sync.
    """
    per_rep = (reference.seconds - fixed_s * reference.commands) * 1e3 / reference.reps
    return max(0.0, per_rep - statistics.fmean(reference_times_ms))


def parent_ms(candidate: Span, fixed_s: float, harness: float) -> float:
    """The candidate's mean milliseconds per call by the parent's clock, less the harness's fixed and per-rep work."""
    return (candidate.seconds - fixed_s * candidate.commands) * 1e3 / candidate.reps - harness


def slack_ms(parent: float, harness: float, reps: int) -> float:
    """How much lower than the parent's figure an honest timer's mean may be."""
    return CALL_SLACK * max(parent, 0.0) + HARNESS_SLACK * harness + JITTER_MS / reps


@dataclass
class Verdict:
    """The parent's view of one candidate timing: its figure, the candidate's own mean, and the noise allowed."""

    parent_ms: float
    claimed_ms: float
    slack_ms: float

    @property
    def disputed(self) -> bool:
        """Whether the candidate's timer claims less than the parent's clock allows."""
        return self.parent_ms > self.claimed_ms + self.slack_ms


def judge_timing(candidate, reference) -> Verdict:
    """The parent's figure for a candidate's timing (judge/timing_plan.ShapeTiming) against the reference's."""
    harness = harness_ms(reference.span, reference.fixed_s, reference.facts["times_ms"])
    parent = parent_ms(candidate.span, reference.fixed_s, harness)
    claimed = statistics.fmean(candidate.facts["times_ms"]) + candidate.side_stream_ms
    return Verdict(parent, claimed, slack_ms(parent, harness, candidate.reps))
