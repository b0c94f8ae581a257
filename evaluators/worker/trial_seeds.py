"""The correctness trials' seeds and input distributions: the parent and both workers draw the same plan."""

from __future__ import annotations

from kernels.problem_types import DISTRIBUTIONS


def trial_plan(seed: int, trials: int) -> list[tuple[int, str]]:
    """(seed, distribution) per trial: distinct seeds, and the non-normal distributions in the first three."""
    return [(seed + 1000 * (i + 1), DISTRIBUTIONS[i % len(DISTRIBUTIONS)]) for i in range(trials)]
