"""The reference's own timed answers (its sketch and its held copy of each repetition), kept for its check.

The parent gives both sides one nonce and one sketch key per shape (judge/timing_plan.py), so the reference's timed
repetition r ran on the inputs of the candidate's repetition r. Where its timing held every output (small outputs,
judge/timing_plan.py), its sketch and its copy of each are what check_reps would otherwise compute again, with one
reference call and input draw a repetition: 0.13 s of a cold level2/6 evaluation on an H100 (bench/timing_breakdown.py).
The check bounds each sketch from the copy; the timing loop itself does the same work on both sides. Computing the
bounds inside the reference's timing loop instead read the reference 0.5-1.7 us slower than itself as a candidate
on every small shape (docs/BENCHMARKS.md). Repetitions the reference did not time (a faster candidate has more)
are still computed in the check.
"""

from __future__ import annotations


class TimedAnswers:
    """Per (shape, nonce, sketch key): {repetition: (its sketch, its outputs' copy)} from the reference's timing."""

    def __init__(self):
        self.kept: dict[tuple[int, int, int], dict[int, tuple]] = {}

    def keep(self, command: dict, facts: dict, held: dict) -> None:
        """A timing block's answers, where it held every repetition's outputs (the rehearsal holds none)."""
        if command["hold"] is not None:
            return
        answers = self.kept.setdefault(_key(command), {})
        for offset, sketch in enumerate(facts["sketches"]):
            rep = command["first"] + offset
            answers[rep] = (sketch, held[rep])

    def take(self, command: dict) -> dict[int, tuple]:
        """The answers under the check's shape, nonce and key (none where the timing used others), given up here."""
        return self.kept.pop(_key(command), {})


def _key(command: dict) -> tuple[int, int, int]:
    return command["shape"], command["nonce"], command["sketch_key"]
