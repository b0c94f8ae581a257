"""The reference's sketches and bounds of the repetitions it timed, kept for its check of the candidate's.

The parent gives both sides one nonce and one sketch key per shape (judge/timing_plan.py), so the reference's timed
repetition r ran on the inputs of the candidate's repetition r. Its sketch there, bounded in its own timing loop, is
what check_reps would otherwise compute again with one more reference call and input draw per repetition: 0.13 s
of a cold level2/6 evaluation on an H100 (bench/timing_breakdown.py). Repetitions it did not time (a faster
candidate has more) and those checked element-wise are still computed in the check.
"""

from __future__ import annotations

# The bound's float64 working copies (a few times the output's bytes) are not in the memory plan, which leaves the
# timing sets most of the room: past this size the check computes them after the timing, as before.
BOUNDED_OUTPUT_BYTES = 16 << 20


class TimedAnswers:
    """Per (shape, nonce, sketch key): {repetition: (its sketch, its bound)} from the reference's timing."""

    def __init__(self):
        self.kept: dict[tuple[int, int, int], dict[int, tuple]] = {}

    @staticmethod
    def tolerance(memory: dict, shape: int, atol, rtol) -> tuple | None:
        """What the timing loop bounds sketches with at `shape`; None where its outputs are too large to.

        The CPU's plan has no sizes: its shapes are small.
        """
        sizes = memory.get("sizes")
        small = not sizes or sizes[shape]["output_bytes"] <= BOUNDED_OUTPUT_BYTES
        return (atol, rtol) if small else None

    def keep(self, command: dict, facts: dict) -> None:
        """Take the bounds out of a timing reply's facts (the parent never sees them) and keep them by repetition."""
        bounds = facts.pop("bounds", None)
        if bounds is None:
            return
        answers = self.kept.setdefault((command["shape"], command["nonce"], command["sketch_key"]), {})
        for offset, (sketch, bound) in enumerate(zip(facts["sketches"], bounds, strict=True)):
            answers[command["first"] + offset] = (sketch, bound)

    def of(self, command: dict) -> dict[int, tuple]:
        """The kept answers under the check's shape, nonce and key (none where the timing used others)."""
        return self.kept.get((command["shape"], command["nonce"], command["sketch_key"]), {})
