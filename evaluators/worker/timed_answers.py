"""The reference's own timed answers (its sketch and its held copy of each repetition), kept for its check.

The parent gives both sides' block b one nonce and the shape one sketch key (judge/timing_plan.py), so the
reference's repetition k of block b ran on the inputs of the candidate's repetition k of block b. Where its timing
held every output (small outputs, judge/timing_plan.py), its sketch and its copy of each are what check_reps would
otherwise compute again, with one reference call and input draw a repetition: 0.13 s of a cold level2/6 evaluation
on an H100 (bench/probes/timing_breakdown.py). The check bounds each sketch from the copy; the timing loop itself
does the same work on both sides. Computing the bounds inside the reference's timing loop instead read the reference
0.5-1.7 us slower than itself as a candidate on every small shape (docs/BENCHMARKS_HISTORY.md). Repetitions the
reference did not time (a faster candidate has more a block) are still computed in the check.
"""

from __future__ import annotations


class TimedAnswers:
    """Per (shape, block nonce, sketch key): {offset in the block: (its sketch, its outputs' copy)}."""

    def __init__(self):
        self.kept: dict[tuple[int, int, int], dict[int, tuple]] = {}

    def keep(self, command: dict, facts: dict, held: dict) -> None:
        """A timing block's answers, where it held every repetition's outputs (the rehearsal holds none)."""
        if command["hold"] is not None:
            return
        # One timing's at a time: a new sketch key is a new timing, so answers no check took (a candidate that failed
        # before its check, a disputed timing made again) are given up here, not kept by a warm reference for good.
        self.kept = {key: answers for key, answers in self.kept.items() if key[2] == command["sketch_key"]}
        answers = self.kept.setdefault((command["shape"], command["nonce"], command["sketch_key"]), {})
        for offset, sketch in enumerate(facts["sketches"]):
            answers[offset] = (sketch, held[command["first"] + offset])

    def take(self, command: dict) -> dict[int, tuple]:
        """{candidate repetition: answer} under the check's blocks and key (none where the timing used others).

        Every answer of the shape is given up here, the blocks the check did not name too (a timing made again, a
        reference that timed blocks its candidate did not): a block's answers serve one check, and those left would
        stay in a warm reference until its next timing.
        """
        taken = {}
        for first, reps, nonce in command["blocks"]:
            answers = self.kept.get((command["shape"], nonce, command["sketch_key"]), {})
            taken |= {first + offset: answer for offset, answer in answers.items() if offset < reps}
        self.kept = {key: answers for key, answers in self.kept.items() if key[0] != command["shape"]}
        return taken
