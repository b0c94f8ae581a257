"""Anti-cheat flags and their severity: a hard flag sets a candidate aside until a strict re-evaluation clears it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

Severity = Literal["hard", "soft"]

# Hard: the measured speed cannot be trusted as it stands. Soft: worth a reader's look; the figure the result reports
# stands (where the flag changed it, as timing_disputed does, the change is already in it).
SEVERITY: dict[str, Severity] = {
    "beyond_plausible": "hard",  # a speedup past EvalOptions.max_speedup
    "beyond_roofline": "hard",  # faster than the device's peaks allow
    "no_custom_kernel": "hard",  # PyTorch calling PyTorch: no Triton, no CUDA/HIP source
    "side_stream": "hard",  # work outlives the timed stream
    "unwatched": "hard",  # the reference's watch over its blocks' ends missed their marks (judge/verdicts.py)
    "rewrote_problem": "hard",  # the problem's files changed while this evaluation ran alone (judge/problem_files.py)
    "problem_changed": "hard",  # they changed while it and others ran: which one changed them is not known
    "monkey_patch": "soft",
    "streams_threads": "soft",
    "introspection": "soft",
    "environment": "soft",
    "torch_fallback": "soft",
    "reference_timing": "soft",  # something odd in the reference's own timing
    "host_bound": "soft",  # its calls take longer to issue than the device takes to run them
    # The parent's clock saw more than the candidate's timer claims, past the allowance: the parent's figure replaced
    # the timer's. Host work beyond the reference's (a slower launcher, Python around the kernels) reads so as surely
    # as a forged timer, and the parent's figure is the figure either way: a forger gains nothing by it that a claim
    # just inside the allowance would not, and an honest candidate set aside for its launches is failed by the harness.
    "timing_disputed": "soft",
}

# A strict run checks every timed output, so a large speedup it measures is real: it vouches for these codes.
STRICT_VOUCHES = frozenset({"beyond_plausible"})
# What can be one run's accident (a timing anomaly; a change another evaluation beside it may have made): a strict
# run clears them by not showing them again.
STRICT_RECHECKS = frozenset({"side_stream", "problem_changed", "unwatched"})
# Not clearable (beyond_roofline, no_custom_kernel, rewrote_problem): no repetition makes physics or a missing kernel
# go away, nor a candidate that changed the harness's files.
# Hard, yet the timing stands as measured (PyTorch timed as PyTorch): a suite still confirms such a row's change.
TIMING_STANDS = frozenset({"no_custom_kernel"})


class Flag(BaseModel):
    """One thing the evaluator found odd: a stable code, its severity, and a sentence for people."""

    code: str
    severity: Severity
    text: str

    @classmethod
    def make(cls, code: str, text: str) -> Flag:
        """A flag with the severity its code carries."""
        return cls(code=code, severity=SEVERITY[code], text=text)


def sets_aside(flag: Flag, strict: bool) -> bool:
    """Whether this flag sets a correct result aside: every hard flag, but a strict run's own vouched codes."""
    return flag.severity == "hard" and not (strict and flag.code in STRICT_VOUCHES)


def strict_can_clear(flags: list[Flag]) -> bool:
    """Whether a strict re-evaluation may clear a result with these flags (every hard one vouched or rechecked)."""
    return _hard_only(flags, STRICT_VOUCHES | STRICT_RECHECKS)


def timing_stands(flags: list[Flag]) -> bool:
    """Whether every hard flag leaves the measured timing as it stands (TIMING_STANDS)."""
    return _hard_only(flags, TIMING_STANDS)


def _hard_only(flags: list[Flag], codes: frozenset[str]) -> bool:
    return all(flag.severity != "hard" or flag.code in codes for flag in flags)
