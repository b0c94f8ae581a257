"""The parent's clock around each timing block bounds the statistic a side reports (judge/wall.py)."""

import math

import pytest

from evaluators import EvalOptions
from evaluators.judge import verdicts
from evaluators.judge.evaluate import _malformed_timing
from evaluators.judge.result import EvalResult, ShapeResult
from evaluators.judge.timing_plan import LONGEST_MS, Block, ShapeTiming, honest_reps
from evaluators.judge.wall import (
    CREDIT_SHARE,
    SEAL_JITTER_MS,
    SEAL_SLACK,
    SWITCH_MS,
    Span,
    harness_ms,
    judge_timing,
    parent_ms,
    reported_ms,
    slack_ms,
)

BLOCKS, BLOCK_REPS = 10, 10
REPS = BLOCKS * BLOCK_REPS
HARNESS_MS = 0.2  # flush, input draws, held copies: per repetition, on both sides
META = {
    "shapes": [{"roofline": {"flops": 10**9, "bytes": 10**9}, "dtype": "fp32"}],
    "device_name": "NVIDIA H100 80GB HBM3",
}
FIXED_S = 0.002  # the pipe, the flush buffer, the last sync
REPS_FOR = honest_reps("cuda", EvalOptions())


def timing(claimed: list[float], real: list[float] | float, switched: bool = True) -> ShapeTiming:
    """A shape timed in BLOCKS blocks whose timer says `claimed` (per repetition) while the work took `real`.

    `real` is the work per call of each block (or one figure for all): what the parent's clock sees. `switched`: each
    block begins with the device's switch from the reference's context, as a candidate's does (the reference's not).
    """
    real = [real] * BLOCKS if isinstance(real, (int, float)) else real
    switch_s = SWITCH_MS * 1e-3 if switched else 0.0
    blocks = [Block(b * BLOCK_REPS, BLOCK_REPS, b, FIXED_S + switch_s + BLOCK_REPS * (real[b] + HARNESS_MS) * 1e-3)
              for b in range(BLOCKS)]  # fmt: skip
    shape = ShapeTiming(REPS, {"times_ms": list(claimed)}, blocks=blocks)
    shape.span = Span(sum(b.seconds for b in blocks), REPS, BLOCKS)
    shape.fixed_s = shape.floor_s = FIXED_S  # all of a command's cost the pipe's (test_the_credit_* below: not)
    return shape


def honest(ms: float, switched: bool = True) -> ShapeTiming:
    return timing([ms] * REPS, ms, switched)


def judged(candidate: ShapeTiming, device: str = "cuda", reference: ShapeTiming | None = None) -> EvalResult:
    result = EvalResult(status="correct", device=device)
    result.shapes.append(ShapeResult(name="s", kind="benchmark", status="correct"))
    ok = verdicts.apply_shape_timing(
        result, 0, candidate, reference or honest(1.0, switched=False), META, EvalOptions()
    )
    assert ok
    return result


def test_the_calibration_recovers_the_real_time_and_the_harness():
    reference = honest(1.0, switched=False)
    harness = harness_ms(reference, "cuda")
    assert harness == pytest.approx(HARNESS_MS)
    assert parent_ms(timing([0.01] * REPS, 0.5, switched=False).span, FIXED_S, harness) == pytest.approx(0.5)


def test_an_honest_timer_within_the_noise_keeps_its_figure_and_no_flag():
    result = judged(timing([0.5] * REPS, 0.5 + 0.5 * slack_ms(0.5, HARNESS_MS, REPS, "cuda")))
    assert result.shapes[0].runtime_ms == pytest.approx(0.5)
    assert not result.flags


def test_a_timer_that_claims_less_than_the_parent_saw_is_disputed_and_the_parents_figure_used():
    result = judged(timing([0.05] * REPS, 0.5))
    assert result.shapes[0].runtime_ms == pytest.approx(0.5)
    assert [f.code for f in result.flags] == ["timing_disputed"]
    # The figure is the parent's, its band the parent's blocks': what is left to flag is for a reader.
    assert result.flags[0].severity == "soft" and result.shapes[0].speedup == pytest.approx(1.0 / 0.5)
    verdicts.summarize(result, EvalOptions())
    assert result.set_aside is None and result.speedup == pytest.approx(2.0)


def test_on_the_cpu_the_parents_figure_is_a_floor_without_a_flag():
    result = judged(timing([0.05] * REPS, 0.5, switched=False), device="cpu")
    assert result.shapes[0].runtime_ms == pytest.approx(0.5)
    assert not result.flags


def test_forging_most_repetitions_of_every_block_while_keeping_the_mean_gains_nothing():
    # Case (a): seven repetitions of ten claim almost nothing, the other three the rest; every block's mean is
    # honest, so the reported figure is the real one and the parent has nothing to dispute. The median of the
    # repetitions would have read 0.01 ms: a 100x "speedup".
    block = [0.01] * 7 + [(BLOCK_REPS - 0.07) / 3] * 3
    candidate = timing(block * BLOCKS, 1.0)
    assert reported_ms(candidate) == pytest.approx(1.0, rel=0.05)
    result = judged(candidate)
    assert result.shapes[0].speedup == pytest.approx(1.0, rel=0.05)


def test_one_call_doing_the_whole_blocks_work_reads_the_blocks_mean():
    # Case (b), "super-batching": the first call of each block computes every answer of the block, the others
    # return them. Its times are honest, and so is the figure: the block's mean, not the fast calls' median.
    claimed = [BLOCK_REPS * 1.0 if r % BLOCK_REPS == 0 else 0.001 for r in range(REPS)]
    result = judged(timing(claimed, 1.0))
    assert result.shapes[0].runtime_ms == pytest.approx(1.0, rel=0.01)
    assert not result.flags


def test_forging_whole_blocks_moves_the_figure_no_further_than_the_allowance():
    # Four blocks of ten claim nothing: the median of the blocks moves off the honest ones by at most the noise
    # the parent allows, and forging the majority is disputed.
    few = timing([0.0] * 40 + [1.0] * 60, 1.0)
    verdict = judge_timing(few, honest(1.0, switched=False), REPS_FOR, "cuda")
    assert reported_ms(few) >= verdict.parent_ms - verdict.slack_ms
    many = judged(timing([0.0] * 60 + [1.0] * 40, 1.0))
    assert "timing_disputed" in [f.code for f in many.flags]
    assert many.shapes[0].runtime_ms == pytest.approx(1.0)


def test_the_reference_judged_by_the_same_rule_is_never_disputed_by_its_own_calibration():
    # One slow command of three (the CPU's pipe): calibrated by a mean, the median of the reference's own figures
    # read 0.77 ms against its 0.1 ms, and its floor raised the baseline fivefold.
    reference = timing([0.1] * REPS, [0.8] * 3 + [2.8] * 7, switched=False)
    verdict = judge_timing(reference, reference, REPS_FOR, "cuda")
    assert verdict.parent_ms == pytest.approx(reported_ms(reference)) and not verdict.disputed
    result = judged(honest(1.0), reference=reference)
    assert result.shapes[0].baseline_ms == pytest.approx(0.1)


@pytest.mark.parametrize("device", ["cuda", "cpu"])
@pytest.mark.parametrize("real", [0.0, 1e-9, 0.5])
def test_a_time_of_zero_ends_in_a_verdict_with_finite_figures(device, real):
    result = judged(timing([0.0] * REPS, real), device=device)
    shape = result.shapes[0]
    assert shape.runtime_ms >= verdicts.RESOLUTION_MS
    assert math.isfinite(shape.speedup) and math.isfinite(shape.roofline.achieved_tflops)
    verdicts.summarize(result, EvalOptions())
    assert result.status == "correct" and math.isfinite(result.speedup)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), -float("inf"), 1e300, True, "1.0", None])
def test_a_time_that_is_not_a_duration_is_a_malformed_reply(bad):
    candidate = honest(1.0)
    candidate.facts["times_ms"][7] = bad
    assert "not a finite, non-negative number" in _malformed_timing(candidate)


def test_the_largest_duration_a_reply_may_carry_still_gives_a_finite_verdict():
    result = judged(timing([LONGEST_MS] * REPS, 1.0))
    verdicts.summarize(result, EvalOptions())
    assert result.status == "correct" and 0 < result.speedup < 1e-6


def test_a_side_given_few_repetitions_gets_no_more_jitter_than_its_calls_earn():
    """A warm-up slowed on purpose buys a side few repetitions; the jitter is spread over what a call of the parent's
    figure is given (judge/timing_plan.repetitions), so a timer claiming a third of a 0.1 ms call is disputed."""
    blocks = [Block(b * 10, 10, b, FIXED_S + 10 * (0.1 + HARNESS_MS) * 1e-3) for b in range(2)]
    few = ShapeTiming(20, {"times_ms": [0.033] * 20}, blocks=blocks)
    few.span, few.fixed_s = Span(sum(b.seconds for b in blocks), 20, 2), FIXED_S
    trusting = judge_timing(
        few, honest(0.1, switched=False), lambda ms: 0, "cuda"
    )  # its own count: 1 ms of jitter over 20 repetitions
    assert not trusting.disputed
    verdict = judge_timing(few, honest(0.1, switched=False), REPS_FOR, "cuda")
    assert verdict.disputed and verdict.slack_ms < trusting.slack_ms
    assert verdict.parent_ms == pytest.approx(trusting.parent_ms)


def test_a_long_call_whose_timer_claims_a_tenth_less_is_disputed():
    """The red team's forger: a 20 ms call whose blocks of ten lose their forged tenth (about 10 % less), which the flat
    10 % share let through. A long call's share is 3 % plus the cost of a few more launches than the reference's."""
    result = judged(timing([18.0] * REPS, 20.0), reference=honest(20.0, switched=False))
    assert [f.code for f in result.flags] == ["timing_disputed"]
    assert result.shapes[0].runtime_ms == pytest.approx(20.0)
    honest_launches = judged(
        timing([19.7] * REPS, 20.0), reference=honest(20.0, switched=False)
    )  # 0.3 ms of launches beyond
    assert not honest_launches.flags and honest_launches.shapes[0].runtime_ms == pytest.approx(19.7)


def test_a_short_calls_share_is_still_a_tenth_and_the_cpus_calls_keep_it():
    assert slack_ms(1.0, 0.0, 10**9, "cuda") == pytest.approx(0.10)
    assert slack_ms(20.0, 0.0, 10**9, "cuda") == pytest.approx(0.03 * 20 + 0.15)
    assert slack_ms(20.0, 0.0, 10**9, "cpu") == pytest.approx(2.0)


@pytest.mark.parametrize("figure", [10**400, True, float("nan"), float("inf"), -1.0, "1.0", LONGEST_MS * 2])
def test_a_figure_no_duration_is_refused_without_an_error(figure):
    assert verdicts.is_duration(figure) is False


PIPE_S = 0.0005  # of FIXED_S, what a command costs any process: the reference's answer to a ping


def _calibrated(shape: ShapeTiming) -> ShapeTiming:
    """`shape` with the reference's ping read below its command with no repetition."""
    shape.floor_s = PIPE_S
    return shape


def _answering_faster(ms: float, switched: bool = True) -> ShapeTiming:
    """Honest calls of `ms` and an honest timer, in commands that skip all of their own work but the pipe."""
    shape = honest(ms, switched)
    for block in shape.blocks:
        block.seconds -= FIXED_S - PIPE_S
    return shape


def test_the_credit_beyond_the_pipe_is_a_share_of_the_blocks_calls():
    """A candidate skipping its commands' own work is credited it only up to CREDIT_SHARE of its calls: the figure
    falls below its real calls by that share, where crediting the reference's whole cost took 0.15 ms off each."""
    reference = _calibrated(honest(1.0, switched=False))
    verdict = judge_timing(_answering_faster(1.0), reference, REPS_FOR, "cuda")
    assert verdict.parent_ms == pytest.approx(1.0 - CREDIT_SHARE)
    block = _answering_faster(1.0, switched=False).blocks[0]
    assert parent_ms(Span(block.seconds, block.reps), FIXED_S, harness_ms(reference, "cuda")) == pytest.approx(
        1.0 - (FIXED_S - PIPE_S) * 1e3 / BLOCK_REPS
    )


def test_an_honest_candidate_pays_what_its_commands_cost_beyond_the_share():
    """Where a block's calls are long, the whole cost is credited; where short, the rest counts as its calls'."""
    reference = _calibrated(honest(1.0, switched=False))
    assert judge_timing(honest(20.0), reference, REPS_FOR, "cuda").parent_ms == pytest.approx(20.0)
    beyond_ms = (FIXED_S - PIPE_S) * 1e3
    short = judge_timing(honest(1.0), reference, REPS_FOR, "cuda")
    assert short.parent_ms == pytest.approx(1.0 + beyond_ms / BLOCK_REPS - CREDIT_SHARE * short.parent_ms, rel=1e-3)


def test_the_reference_and_the_cpu_are_credited_the_whole_cost():
    """The reference's own commands cost it what its command with no repetition did; on the CPU no flag rests on it."""
    reference = _calibrated(honest(1.0, switched=False))
    assert judge_timing(reference, reference, REPS_FOR, "cuda").parent_ms == pytest.approx(1.0)
    assert judge_timing(_answering_faster(1.0, switched=False), reference, REPS_FOR, "cpu").parent_ms == pytest.approx(
        1.0 - (FIXED_S - PIPE_S) * 1e3 / BLOCK_REPS
    )


def test_the_claim_holds_only_the_side_stream_work_the_runtime_counts():
    """A side-stream reading under the count's threshold raises neither the runtime nor the claim the parent checks:
    reported a few microseconds under it, the raw reading had lifted the claim alone (second red team of 2026-11-28).
    """
    reference, quiet, lifted, counted = honest(0.2, switched=False), honest(0.2), honest(0.2), honest(0.2)
    reference.side_stream_ms, quiet.side_stream_ms = 0.015, 0.015
    lifted.side_stream_ms, counted.side_stream_ms = 0.015 + 0.0024, 0.015 + 0.05
    claims = [judge_timing(side, reference, REPS_FOR, "cuda").claimed_ms for side in (quiet, lifted, counted)]
    assert claims == pytest.approx([0.2, 0.2, 0.25])
    assert judge_timing(reference, reference, REPS_FOR, "cuda").claimed_ms == pytest.approx(0.215)


def sealed(shape: ShapeTiming, seal_ms_per_rep: float) -> ShapeTiming:
    """`shape` with each block's seal taking the pipe and `seal_ms_per_rep` a repetition (timing_plan.Side.block)."""
    for block in shape.blocks:
        block.seal_s = FIXED_S + block.reps * seal_ms_per_rep * 1e-3
    return shape


def test_a_seal_longer_than_the_references_past_its_noise_counts_as_the_calls_work():
    """Work moved from the calls into the seal (answers finished while the outputs are digested) is the calls'."""
    reference = sealed(honest(1.0, switched=False), 0.5)
    within = 0.5 + 0.9 * (SEAL_SLACK * 0.5 + SEAL_JITTER_MS / BLOCK_REPS)
    assert judge_timing(sealed(honest(1.0), within), reference, REPS_FOR, "cuda").parent_ms == pytest.approx(1.0)
    mover = sealed(timing([0.6] * REPS, 0.6), 0.5 + 0.4)  # 0.4 ms of each call done in the seal
    clock = judge_timing(mover, reference, REPS_FOR, "cuda")
    assert clock.parent_ms == pytest.approx(1.0 - SEAL_SLACK * 0.5 - SEAL_JITTER_MS / BLOCK_REPS)
    assert clock.seal_ms == pytest.approx(0.5) and clock.seal_excess_ms == pytest.approx(0.4)
    assert clock.disputed


def test_a_seal_quicker_than_the_references_is_credited_nothing():
    reference = sealed(honest(1.0, switched=False), 0.5)
    clock = judge_timing(sealed(honest(1.0), 0.0), reference, REPS_FOR, "cuda")
    assert clock.parent_ms == pytest.approx(1.0) and clock.seal_excess_ms == pytest.approx(-0.5)


def test_on_the_cpu_a_blocks_seal_counts_as_its_calls():
    """Off the GPU the seal hands the outputs over into files: a call's work put there is still the call's.

    Weighed by no one before, a red team's Triton kernel doing all its work there read 1.3-1.8x (CPU).
    """
    reference = sealed(honest(1.0, switched=False), 0.0)
    lazy = sealed(timing([0.1] * REPS, 0.1, switched=False), 0.9)  # 0.9 ms of each call's work done in its block's seal
    clock = judge_timing(lazy, reference, REPS_FOR, "cpu")
    assert clock.parent_ms == pytest.approx(1.0)
    assert clock.disputed


def test_a_pins_opens_are_credited_their_time_up_to_honest_ones_and_one_context_switch_a_block():
    """The switch from the candidate's context to the reference's comes once a pin, whatever it opens (an add 0.079 ms
    after its own process's work, 0.237 ms after another's: bench/probes/context_switch.py); the opens' own time is
    credited no further than honest opens take."""
    from evaluators.judge.wall import OPEN_MS, SWITCH_MS, open_credit_ms

    def block(opened: int, open_ms: float) -> Block:
        pinned = Block(0, 31, 0, picked=[3, 17])
        pinned.pin = {"opened": opened, "opened_bytes": 0, "open_ms": open_ms}
        return pinned

    assert open_credit_ms(block(2, 0.5), 2 / 31) == pytest.approx(0.5 + SWITCH_MS)
    assert open_credit_ms(block(8, 0.5), 2 / 31) == pytest.approx(0.5 + SWITCH_MS)  # not a switch an output
    assert open_credit_ms(block(2, 20.0), 2 / 31) == pytest.approx(2 * OPEN_MS + SWITCH_MS)  # slow opens: no more
    assert open_credit_ms(Block(0, 31, 0), 2 / 31) == 0.0  # nothing pinned: nothing switched to
