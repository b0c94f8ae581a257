"""The parent's clock as the outer truth of a timing: what a side's own timer may claim, and no less.

The parent times each timing command from sending it to having its reply. The reference ran the same routine in
its own (trusted) process, in as many commands, and once more with no repetition (the fixed cost of a command:
the pipe, the last sync, the reply), so what the harness costs per repetition (drawing inputs, flushing, holding the
outputs) is known apart from the reference's own calls; what is left of a side's span is its calls. Work hidden
anywhere in the candidate's process while the command runs (a patched timer, answers recomputed between repetitions,
a stall) shows up there. The outputs' handoff is the block's seal, timed apart and weighed against the
reference's (block_ms), and so is the reference's pin of the outputs its check reads (worker/pins.py), which comes
right behind the candidate's seal.

What a command costs beyond the pipe is work in the candidate's own process, which it may skip: credited in full at
the reference's cost, a candidate answering its commands faster was credited the difference over each block's few
repetitions (a red team's simulated 0.2 ms call read 2.5x unflagged at 2 ms saved a command). So a candidate's block
is credited the pipe in full (the reference's answer to a ping, which does nothing) and the rest of the reference's
fixed cost only up to CREDIT_SHARE of the block's calls: skipping it gains no more than that share.

The statistic a shape reports is the median, over its blocks, of each block's mean time per call, and the parent
checks that same statistic: the median over the same blocks of its own figure per call. A mean is what the parent's
clock can vouch for (it sees a command, not its repetitions), so within a block neither forging some repetitions'
times nor moving work from one repetition to another lowers it; the median over blocks keeps the robustness honest
timings need against a slow passing episode. A side whose statistic is below the parent's by more than the noise
allowed has the parent's figure put in its place; the candidate is also flagged (judge/verdicts.py).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

from evaluators.judge.timing_plan import Span, block_count, block_times, checked_per_block

# How far an honest candidate's timer may sit below the parent's figure: a share of the call, a share of the
# harness work per repetition (the flush and input draws vary from one run to the next), and a fixed jitter of
# the two processes' wake-ups spread over the repetitions. The call's share is CALL_SLACK of a short call, and for a
# long one CALL_SHARE of it plus LAUNCHES_MS: what is left of an honest timer's gap once the harness costs the two
# processes alike is mostly the host's cost of launches beyond the reference's (a Triton launch issued 0.03-0.07 ms
# slower than an aten one on an H200). KernelBench's references judged as themselves, and the bundled seeds, used at
# most 65 % of it on calls over 2 ms there (docs/BENCHMARKS.md, "How far an honest timer sits below the parent's
# clock"); a flat 10 % had let a forger take 10 % of a 20 ms call unflagged. On the CPU a call keeps CALL_SLACK: the
# interpreter's timings and the parent's figure of them are noise-bound, a floor there moved honest candidates (an
# identity candidate read a significant 0.88x), and no flag is raised there to tell a forger by.
# The harness's share is HARNESS_SLACK: KernelBench's levels 1-3 judged as themselves used at most 2.7 % of the
# harness's work beyond the call's share on two H200s, and 0.8 % on an H100 (bench/identity_journals.py). It was 15 %,
# sized on runs with a 512 MB flush that used up to 14.5 %; within it a timer could claim a median 1.27x on level 1,
# whose harness work (gigabytes of inputs drawn, as large outputs digested) is a median 4.1 ms a repetition.
CALL_SLACK, CALL_SHARE, LAUNCHES_MS, HARNESS_SLACK, JITTER_MS = 0.10, 0.03, 0.15, 0.05, 1.0
# The most of a block's calls the reference's fixed cost beyond the pipe may be credited as (see above).
CREDIT_SHARE = 0.01
# How much longer than the reference's a candidate's seal may take before the rest counts as its calls' work: a share
# of the reference's seal per repetition (then the outputs' digests and handoff), and a fixed jitter of a command. On
# one H200, KernelBench's levels 1 and 2 judged as themselves needed at most 2.4 % of the reference's seal beyond the
# jitter (one shape 21 % of a 0.16 ms seal: 0.03 ms of an 8.4 ms call), so 3 %; at 10 % a 0.055 ms call could move
# four fifths of its work into a seal four times its length (bench/identity_journals.py).
SEAL_SLACK, SEAL_JITTER_MS = 0.03, 0.10
# The reference's pin of a candidate's block opens the picked outputs through CUDA IPC, which its pin of its own does
# not: the opens, timed by the reference, are credited up to OPEN_MS an opened output and OPEN_MS_PER_GIB of its bytes.
# Opening one output (its descriptor read too) took a median 0.22, 0.27, 0.38 and 0.56 ms at 4, 128, 1024 and 4096 MiB
# on an H200, at most 0.26, 0.35, 0.45 and 0.89 (bench/probes/check_reps_parts.py --no-event). No more: the device runs
# the candidate's leftover work while an open takes its time.
OPEN_MS, OPEN_MS_PER_GIB = 0.35, 0.10
# What an honest candidate's pin still takes beyond the reference's of its own, once a block: the device's switch from
# the candidate's context, whose block ran just before, to the reference's, whose own pin follows its own block. On
# one H200 a one-element add took a median 0.079 ms right after its own process's burst of copies and 0.237 ms right
# after another process's, a pin's sample 0.182 and 0.255 ms (bench/probes/context_switch.py). Credited before as
# 0.2 ms an opened output (the first reads of memory just mapped, it was thought), it left honest pins a median
# 0.64 ms a block under the reference's on level 1 (two H200s): room for leftover work. Keeping the candidate's
# segments mapped cut an honest open from 0.29 to 0.08 ms, and the pin still ran 0.49 ms a block over the reference's
# (docs/BENCHMARKS_HISTORY.md).
SWITCH_MS = 0.20
# Where the reference watched a candidate's block's host windows (worker/window_watch.py), what its watcher did not run
# beyond its own blocks' watch and one switch counts as the calls' work, past this jitter of a block: work the
# candidate left on the device, which ran through its seal, the pipes and the pin. The switch is then the watch's, not
# the pin's: the watcher has brought the device to the reference's context before the pin's first read. On two H200s
# the honest candidates of KernelBench's levels 1 and 2 read a median of -0.053 and -0.049 ms a block beyond the
# reference's watch and the switch, -0.032 ms at most (bench/identity_journals.py): what the jitter leaves a candidate
# is room for work, so it is kept small.
WATCH_JITTER_MS = 0.05


# The side-stream probe reads a few microseconds on code that runs on one stream too (0.2-21 us for the bundled
# references on an H100 by medians, more after longer calls; it now takes minima, worker/timing.py): the
# reference's reading at the same shape is that floor, and a candidate's reading is counted as work only where it
# exceeds the floor by more than the probe's noise. An honest candidate's reading exceeded the reference's by up to
# 2.1 us on calls under 0.25 ms, in 232 shape timings of the bundled references judged as themselves on an H100
# (docs/BENCHMARKS_HISTORY.md); at 1 us, 1.0 us of that noise was counted into an 18 us call, 5.8 % of it.
SIDE_NOISE_MS, SIDE_NOISE_SHARE = 0.0025, 0.01


def counted_s(block, reference, device: str) -> float:
    """A block's seconds on the parent's clock that hold its calls: on the CPU its seal's too, less the seal's pipe.

    On a GPU the seal is weighed apart (block_ms). On the CPU it is the handoff of the held outputs into their files,
    which a process could put its calls' work into, timed by no one: a red team's Triton kernel, its work all done
    there, read 1.3-1.8x against a reference 40 times faster than it.
    """
    if device == "cuda":
        return block.seconds
    return block.seconds + max(0.0, block.seal_s - reference.floor_s)


def harness_ms(reference, device: str) -> float:
    """The harness's own milliseconds per repetition, outside the timed calls, by the reference's blocks.

    By the statistic every figure uses: the median over the reference's blocks of its span per repetition (less the
    command with no repetition: the pipe, the flush buffer, the last sync), less its reported figure. Calibrated by a
    mean instead, one slow command of three raised the harness for all, and the median of the reference's own
    figures then read above its times: the reference disputed by its own calibration.
    """
    spans = [parent_ms(Span(counted_s(b, reference, device), b.reps), reference.fixed_s, 0.0) for b in reference.blocks]
    return max(0.0, statistics.median(spans) - reported_ms(reference))


def parent_ms(span: Span, fixed_s: float, harness: float) -> float:
    """Mean milliseconds per call by the parent's clock over `span`, less the harness's fixed and per-rep work."""
    return (span.seconds - fixed_s * span.commands) * 1e3 / span.reps - harness


def slack_ms(parent: float, harness: float, reps: int, device: str) -> float:
    """How much lower than the parent's figure an honest timer's statistic may be, on `device` ("cuda" or "cpu")."""
    call = max(parent, 0.0)
    share = min(CALL_SLACK * call, CALL_SHARE * call + LAUNCHES_MS) if device == "cuda" else CALL_SLACK * call
    return share + HARNESS_SLACK * harness + JITTER_MS / reps


def seal_ms(reference) -> float:
    """The reference's seal per repetition (ms): the median over its blocks of its seal's span, less a ping."""
    return statistics.median(max(0.0, b.seal_s - reference.floor_s) * 1e3 / b.reps for b in reference.blocks)


def seal_excess_ms(block, reference, seal: float) -> float:
    """What a block's seal took per call beyond the reference's seal of as many repetitions (may be negative)."""
    return ((block.seal_s - reference.floor_s) * 1e3 - block.reps * seal) / block.reps


def pin_ms(reference) -> float:
    """The reference's pin of its own outputs per repetition pinned (ms): the median over its blocks, less a ping.

    0.0 where none was pinned (the CPU, outputs held on the host).
    """
    pins = [max(0.0, b.pin_s - reference.floor_s) * 1e3 / len(b.picked) for b in reference.blocks if b.picked]
    return statistics.median(pins) if pins else 0.0


def open_credit_ms(block, honest_share: float) -> float:
    """What the reference's IPC opens in a block's pin are credited (ms): their time, up to what honest opens take.

    No more than as many repetitions' opens as an honest call of the block's length would have pinned (`honest_share`
    of its repetitions, pinned_share): a process that slows its rehearsal is given few repetitions, all of each block
    pinned, and each open credited is time the device runs what it left (a red team's simulation, 3-5x). And the
    switch between the two contexts, SWITCH_MS, once, where the block was not watched (the watch pays it there).
    """
    pin, picked = block.pin, len(block.picked or ())
    took, opened, nbytes = (pin.get(key, 0) for key in ("open_ms", "opened", "opened_bytes"))
    if not picked or not all(_is_ms(v) for v in (took, opened, nbytes)):
        return 0.0
    honest = opened * OPEN_MS + OPEN_MS_PER_GIB * nbytes / (1 << 30)
    switch = 0.0 if _watched(block) is not None else SWITCH_MS
    return min(took, honest, honest * honest_share * block.reps / picked) + switch


def _is_ms(value) -> bool:
    return type(value) in (int, float) and 0 <= value < 1e15


def _watched(block) -> float | None:
    """What the reference's watch over the block's host windows saw its watcher not run (ms), if it watched."""
    away = (block.pin or {}).get("away_ms")
    return away if _is_ms(away) else None


def watch_ms(reference) -> float:
    """The reference's watch of its own blocks, right before their pin: the median of what its watcher did not run."""
    seen = [away for b in reference.blocks if (away := _watched(b)) is not None]
    return statistics.median(seen) if seen else 0.0


def watch_excess_ms(block, watch: float) -> float:
    """What another context took of a block's host windows per call, beyond the reference's watch and one switch."""
    away = _watched(block)
    return 0.0 if away is None else (away - watch - SWITCH_MS) / block.reps


def watch_counted_ms(block, watch: float) -> float:
    """What a block's watch saw another context take per call beyond the reference's watch, a switch and the jitter.

    Work the candidate left on the device there is its calls' work, which its own timer never saw: it counts into
    their times (block_times), as work on other streams does (side_stream_counted), and into the parent's figure
    (block_ms), below which a timer may claim up to the allowance.
    """
    return max(0.0, watch_excess_ms(block, watch) - WATCH_JITTER_MS / block.reps)


def pinned_share(honest_reps: Callable[[float], int], retained: int) -> Callable[[float], float]:
    """The share of its repetitions an honest call of `ms` has pinned (judge/timing_plan.picked), by its layout."""

    def share(ms: float) -> float:
        reps = max(honest_reps(ms), 1)
        blocks = block_count(reps, reps, "cuda", retained)
        return min(checked_per_block(blocks) * blocks / reps, 1.0)

    return share


def pin_excess_ms(block, reference, pin: float, honest_share: float) -> float:
    """What the reference's pin of a block took per call beyond its pin of as many of its own outputs (may be < 0)."""
    if not block.picked:
        return 0.0
    took = max(0.0, block.pin_s - reference.floor_s) * 1e3 - open_credit_ms(block, honest_share)
    return (took - len(block.picked) * pin) / block.reps


def block_ms(block, reference, harness: float, seal: float, pin: float, watched: float,
             share: Callable[[float], float]) -> float:  # fmt: skip
    """The parent's figure per call for one block of a side other than the reference itself (judge_timing).

    A block's seal is timed apart from its calls (judge/timing_plan.py): what it takes beyond the reference's, past
    the seal's noise, is work moved out of the calls and counts as theirs. So is work left running on the device
    through the block's host windows: what the reference's pin, right behind the seal, takes beyond its pin of its own
    outputs (its reads share the device with that work), or what the reference's watch over the windows saw another
    context take, `watched` (watch_counted_ms), whichever is more: the watch spans the pin, so the two see the same
    work there. `share(ms)`: the share of its repetitions a call of `ms` honestly has pinned (pinned_share).

    The block's command begins with the device's switch from the reference's context (its drain ran last) to the
    candidate's, which the reference's own blocks, after their own drain, never pay: SWITCH_MS is credited once a block.
    level1/87 (one 3.4 ms repetition a block) read its candidate's command 0.27 ms longer than the reference's, a median
    over 29 blocks on an H200 (bench/probes/block_figures.py), and was disputed in some runs.
    """
    calls = parent_ms(Span(block.seconds, block.reps), reference.floor_s, harness) - SWITCH_MS / block.reps
    beyond = max(0.0, reference.fixed_s - reference.floor_s) * 1e3 / block.reps
    moved = seal_excess_ms(block, reference, seal) - (SEAL_SLACK * seal + SEAL_JITTER_MS / block.reps)
    left = 0.0
    if block.picked:
        left = pin_excess_ms(block, reference, pin, share(calls))
        left -= (SEAL_SLACK * len(block.picked) * pin + SEAL_JITTER_MS) / block.reps
        left = max(left, watched)
    return calls - min(beyond, CREDIT_SHARE * max(calls, 0.0)) + max(0.0, moved) + max(0.0, left)


def side_stream_counted(candidate_ms: float, reference_ms: float, runtime_ms: float) -> float:
    """Milliseconds per call of the candidate's work on other streams, counted into its runtime (0 within noise)."""
    excess = candidate_ms - reference_ms
    return excess if excess > max(SIDE_NOISE_MS, SIDE_NOISE_SHARE * runtime_ms) else 0.0


def reported_ms(side, counted: list[float] | None = None) -> float:
    """The figure a side's timing reports (judge/timing_plan.ShapeTiming): the median of its block means."""
    return statistics.median(map(statistics.fmean, block_times(side, counted)))


@dataclass
class Verdict:
    """The parent's view of one side's timing: its figure, the side's own, and the noise allowed."""

    parent_ms: float
    claimed_ms: float
    slack_ms: float
    blocks_ms: list[float]  # the parent's figure per block, whose median is parent_ms
    harness_ms: float = 0.0  # the harness's own work per repetition, by the reference's blocks (harness_ms)
    seal_ms: float = 0.0  # the reference's seal per repetition (seal_ms)
    seal_excess_ms: float = 0.0  # the side's seal per call beyond it, the median over its blocks (seal_excess_ms)
    pin_ms: float = 0.0  # the reference's pin of its own outputs per repetition pinned (pin_ms)
    # The pin of the side's blocks per call beyond it, the median (pin_excess_ms), its opens credited in full: block_ms
    # credits no more than an honest call pins, which differs only where the side was given few repetitions.
    pin_excess_ms: float = 0.0
    open_ms: float | None = None  # the pin's IPC open of one of the side's outputs, the median over its blocks
    watch_ms: float = 0.0  # what the reference's watch of its own blocks saw its watcher not run (watch_ms)
    # What the watch of the side's blocks saw another context take per call beyond it and a switch, the median over its
    # blocks (watch_excess_ms); None where none was watched.
    watch_excess_ms: float | None = None
    # Per block, the work its timer did not see that counts into its times (watch_counted_ms); None for the reference
    # and off the GPU. The claim holds it, and so must the runtime the verdict reports (judge/verdicts.py).
    counted: list[float] | None = None

    @property
    def disputed(self) -> bool:
        """Whether the side's timer claims less than the parent's clock allows."""
        return self.parent_ms > self.claimed_ms + self.slack_ms


def judge_timing(side, reference, honest_reps: Callable[[float], int], device: str) -> Verdict:
    """The parent's figure for one side's timing (judge/timing_plan.ShapeTiming) against the reference's calibration.

    The side may be the reference itself: both are judged by one rule, but the reference's own commands are credited
    its fixed cost in full, which is what they cost it, as every side's are on the CPU (one repetition a block, and
    no flag rests on the parent's clock there: slack_ms). The jitter is spread over no fewer repetitions
    than `honest_reps(ms)` gives a call the parent's clock puts at `ms` (judge/timing_plan.repetitions): a side's own
    count comes from its warm-up, which a candidate can slow on purpose to be given few repetitions and so a wider
    allowance for a timer that claims a share of each call.
    """
    harness, seal, pin = harness_ms(reference, device), seal_ms(reference), pin_ms(reference)
    watch = watch_ms(reference)
    if side is reference or device != "cuda":
        counted = None
        blocks = [parent_ms(Span(counted_s(b, reference, device), b.reps), reference.fixed_s, harness)
                  for b in side.blocks]  # fmt: skip
    else:
        share = pinned_share(honest_reps, (side.layout or {}).get("retained") or side.reps)
        counted = [watch_counted_ms(b, watch) for b in side.blocks]
        blocks = [block_ms(b, reference, harness, seal, pin, watched, share)
                  for b, watched in zip(side.blocks, counted, strict=True)]  # fmt: skip
    parent = statistics.median(blocks)
    # The candidate's claim holds what its runtime counts of its side-stream reading, no more: the raw reading, a few
    # microseconds under the count's threshold, had raised the claim the parent checks without reaching the runtime.
    reported = reported_ms(side, counted)
    side_ms = side.side_stream_ms if side is reference else side_stream_counted(
        side.side_stream_ms, reference.side_stream_ms, reported)  # fmt: skip
    claimed = reported + side_ms
    reps = max(side.reps, honest_reps(parent))
    excess = statistics.median(seal_excess_ms(b, reference, seal) for b in side.blocks)
    left = statistics.median(pin_excess_ms(b, reference, pin, 1.0) for b in side.blocks)
    opens = [b.pin["open_ms"] / b.pin["opened"] for b in side.blocks if b.picked and b.pin.get("opened")]
    watched = [watch_excess_ms(b, watch) for b in side.blocks if _watched(b) is not None]
    return Verdict(parent, claimed, slack_ms(parent, harness, reps, device), blocks, harness, seal, excess, pin, left,
                   statistics.median(opens) if opens else None, watch,
                   statistics.median(watched) if watched else None, counted)  # fmt: skip
