"""The reference's own timed answers (each repetition's outputs, as its timing held them), kept for its check.

The parent gives both sides' block b one nonce (judge/timing_plan.py), so the reference's repetition k of block b
ran on the inputs of the candidate's repetition k of block b. Its output there is what check_reps would
otherwise compute again, with one reference call and input draw a repetition: 0.13 s of a cold level2/6 evaluation
on an H100 (bench/probes/timing_breakdown.py). The parent asks the reference to keep them where the device holds
them until the check (judge/timing_plan.py); repetitions the reference did not time (a faster candidate has more a
block) are still computed in the check.
"""

from __future__ import annotations


class TimedAnswers:
    """Per (shape, block nonce): {offset in the block: its held outputs}."""

    def __init__(self):
        self.kept: dict[tuple[int, int], dict[int, list]] = {}

    def keep(self, command: dict, held: dict) -> None:
        """A timing block's answers, where the parent asked for them to be kept (the rehearsal holds none)."""
        if not (command["hold"] is True and command.get("keep") is True):
            return
        if command["first"] == 0:
            # A new timing: answers no check took (a candidate that failed before its check, a disputed timing made
            # again) are given up here, not kept by a warm reference for good.
            self.kept = {}
        answers = self.kept.setdefault((command["shape"], command["nonce"]), {})
        for offset in range(command["reps"]):
            answers[offset] = held[command["first"] + offset]

    def take(self, command: dict) -> dict[int, list]:
        """{candidate repetition: answer} under the check's blocks (none where the timing used others).

        Every answer of the shape is given up here, the blocks the check did not name too (a timing made again, a
        reference that timed blocks its candidate did not): a block's answers serve one check, and those left would
        stay in a warm reference until its next timing.
        """
        taken = {}
        for first, reps, nonce in command["blocks"]:
            answers = self.kept.get((command["shape"], nonce), {})
            taken |= {first + offset: answer for offset, answer in answers.items() if offset < reps}
        self.kept = {key: answers for key, answers in self.kept.items() if key[0] != command["shape"]}
        return taken
