"""Red team: the parent's clock on a GPU, on the parent's side (its arithmetic, checked on the CPU).

A strict run on a GPU used to time min(reps, retained) = 4 repetitions a side, so every output could be held: one block
each (then, only that many outputs were kept). The parent's allowance for a timer (judge/wall.py) spreads a fixed 1 ms
of jitter over the repetitions, 0.25 ms a call with four, against 0.002 ms with the 500 a first run of a 0.2 ms kernel
has; and one block a side draws no noise band at all. A forger that claimed the same figure in both runs, 0.25 ms under
what its calls take, was disputed in the first (set aside, so due one strict run) and believed in the strict one, which
then cleared it and was counted. A strict run is now timed as the first is (judge/timing_plan.py, repetitions), and
a dispute sets nothing aside: the parent's figure stands in each run, so a strict run has no dispute to clear. This
drives the real time_side_by_side with fake processes whose spans are what an honest 0.2 ms kernel's would be, as
tests/evaluators/test_side_by_side.py does.

The last test gives the forger a span without the cache flush, which its process can skip (the flush's size is job
data; test_redteam_shared.py shows a CPU worker timed with it at 0): the floor then drops by the flush's length. It
stays xfail: those spans and times are exactly an honest kernel's that is faster by the flush's length, so no rule on
the parent's clock tells the two apart (docs/CONTRACTS.md, "Harness work the candidate skips or overlaps").
"""

import pytest

from evaluators import EvalOptions
from evaluators.judge import timing_plan, verdicts, wall
from evaluators.judge.result import EvalResult, ShapeResult
from evaluators.judge.strict import clears, standing
from evaluators.judge.timing_plan import time_side_by_side
from tests.evaluators.test_side_by_side import Reply, pinned, quiet_for, sealed, where

FIXED_S = 2e-3  # each timing command's own cost (the pipe, the flush buffer, the last sync)
HARNESS_MS = 0.2  # the harness's work per repetition: the input draw and the 512 MB flush (about 0.2 ms, an H100)
REFERENCE_MS, REAL_MS = 0.30, 0.20  # what each side's calls really take
FORGED_MS = 0.05  # what the forger's timer says, in both runs


class Process:
    """A worker answering timing commands: its span is its real calls and the harness; its times are `says_ms`."""

    def __init__(self, call_ms: float, says_ms: float, harness_ms: float = HARNESS_MS):
        self.call_ms, self.says_ms, self.harness_ms = call_ms, says_ms, harness_ms

    def __call__(self, command: dict, event: str) -> Reply:
        if command["cmd"] == "check_reps":
            return Reply("comparison", {"mismatch": None}, 0.0)
        if command["cmd"] == "drain":
            return Reply("drained", {"waited_ms": 0.0}, 0.0)
        if command["cmd"] == "warm":
            return Reply("warmed", {}, FIXED_S + command["calls"] * self.call_ms * 1e-3)
        if command["cmd"] == "probe":
            return Reply("probe", {"side_stream_ms": 0.0}, FIXED_S)
        if command["cmd"] == "ping":
            return Reply("pong", {}, FIXED_S)  # all of a command's cost the pipe's: judge/wall.py credits it in full
        if command["cmd"] == "pin":
            return pinned(command, FIXED_S)
        reps = command["reps"]
        meta = {
            "times_ms": [self.says_ms] * reps,
            "handed": list(range(reps)) if command["hold"] else [],
            "label": "cuda-events",
            "issue_ms": [0.02] * reps,
            "prepare_ms": [0.04] * reps,
        }
        return sealed(Reply("timing", meta, FIXED_S + reps * (self.call_ms + self.harness_ms) * 1e-3), command, FIXED_S)


@pytest.fixture
def cuda_lock(monkeypatch):
    monkeypatch.setattr(timing_plan, "device_key", lambda device: "cuda-fake")


def judged(tmp_path, strict: bool, candidate: Process | None = None) -> EvalResult:
    """One shape timed on "cuda" as evaluate() does, the forger beside an honest reference, and its verdict."""
    options = EvalOptions(cache_dir=tmp_path, strict=strict)
    memory = {"sizes": [{"name": "s", "input_bytes": 1 << 20, "output_bytes": 1 << 20}]}
    layout = {"side_by_side": True, "timing_sets": 2, "retained": 32, "retained_on_device": True}
    reference, candidate = Process(REFERENCE_MS, REFERENCE_MS), candidate or Process(REAL_MS, FORGED_MS)
    args = (0, "cuda", options, memory, lambda: layout, quiet_for([]), where)
    timings = time_side_by_side(reference, candidate, *args)
    if wall.judge_timing(timings[1], timings[0], timing_plan.honest_reps("cuda", options), "cuda").disputed:
        timings = time_side_by_side(reference, candidate, *args)  # evaluate() times a disputed shape again
    reference_timing, timing = timings
    result = EvalResult(status="correct", device="cuda", strict=strict)
    result.shapes.append(ShapeResult(name="s", kind="benchmark", status="correct"))
    meta = {"shapes": [{"roofline": None, "dtype": "fp32"}], "device_name": "NVIDIA H100 80GB HBM3"}
    assert verdicts.apply_shape_timing(result, 0, timing, reference_timing, meta, options)
    return verdicts.summarize(result, options)


def test_the_first_run_disputes_the_forged_timer_and_uses_the_parents_figure(tmp_path, cuda_lock):
    first = judged(tmp_path, strict=False)
    assert [f.code for f in first.flags] == ["timing_disputed"]
    assert first.runtime_ms == pytest.approx(REAL_MS, rel=0.05)  # the parent's figure: the real one
    assert first.set_aside is None and first.speedup == pytest.approx(REFERENCE_MS / REAL_MS, rel=0.05)


def test_the_strict_run_does_not_believe_the_timer_the_first_run_disputed(tmp_path, cuda_lock):
    first, strict = judged(tmp_path, strict=False), judged(tmp_path, strict=True)
    assert strict.reps == first.reps  # timed as the first: its allowance no looser
    assert [f.code for f in strict.flags] == ["timing_disputed"]
    assert strict.runtime_ms == pytest.approx(REAL_MS, rel=0.05), (strict.runtime_ms, strict.speedup)
    held = standing(first, strict)  # a gain the two runs confirm counts at the lesser: the real one, no more
    assert held.measured.speedup <= REFERENCE_MS / REAL_MS * 1.05 and not clears(first, strict)


def test_a_strict_runs_speedup_still_has_a_noise_band(tmp_path, cuda_lock):
    first, strict = judged(tmp_path, strict=False), judged(tmp_path, strict=True)
    assert first.speedup_band is not None and strict.speedup_band is not None


def test_an_honest_strict_run_clears_and_counts_the_lesser_of_the_two_figures(tmp_path, cuda_lock):
    honest = Process(REAL_MS, REAL_MS)
    first = judged(tmp_path, strict=False, candidate=honest)
    first.flag("beyond_plausible", "set aside for its strict run")  # as a first run of a large speedup would be
    strict = judged(tmp_path, strict=True, candidate=honest)
    assert clears(first, strict) and not strict.flags
    held = standing(first, strict)
    assert held.measured.speedup == min(first.speedup, strict.speedup) and held.measured.speedup_band is not None


FLUSH_MS = 0.17  # the 512 MB flush's share of the harness's work per repetition on an H100


@pytest.mark.xfail(
    strict=True,
    reason="bounded: the parent's floor is the candidate's span less the reference's harness work per repetition; a "
    "candidate that skips the cache flush in its own process (job['flush_mb'] = 0, see test_redteam_shared.py) "
    "lowers its floor by the flush's length, so a first run believes a timer 4x below the real call; its spans and "
    "times are an honest kernel's faster by that length, so closing it needs the flush out of the candidate's hands",
)
def test_skipping_the_flush_does_not_lower_the_parents_floor(tmp_path, cuda_lock):
    skipper = Process(REAL_MS, FORGED_MS, harness_ms=HARNESS_MS - FLUSH_MS)  # its calls as slow, cold or not
    first = judged(tmp_path, strict=False, candidate=skipper)
    assert [f.code for f in first.flags] == ["timing_disputed"], (first.runtime_ms, first.speedup)


def test_a_flush_skipper_reads_to_the_parents_clock_as_an_honest_kernel_faster_by_the_flush(tmp_path, cuda_lock):
    # Why the test above stays xfail: what the parent sees of the two (spans, and the times each process reports)
    # is the same, so a rule that disputed the skipper would dispute the honest kernel too.
    skipper = Process(REAL_MS, REAL_MS - FLUSH_MS, harness_ms=HARNESS_MS - FLUSH_MS)
    honest = Process(REAL_MS - FLUSH_MS, REAL_MS - FLUSH_MS)
    seen = [judged(tmp_path, strict=False, candidate=side) for side in (skipper, honest)]
    assert [r.flags for r in seen] == [[], []]
    assert seen[0].runtime_ms == pytest.approx(seen[1].runtime_ms) == pytest.approx(REAL_MS - FLUSH_MS)
