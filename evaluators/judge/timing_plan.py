"""The timing commands the parent sends for one shape: the reference and the candidate, side by side.

Each side is warmed up first; a first warm-up call, timed by the parent, sizes the rest of its warm-up, and the
warm-up a first plan of its repetitions. A short rehearsal then times a few calls with the events the blocks use, and
its median sets the side's repetitions, within what the parent's clock saw of the rehearsal: the warm-up's spans also
hold the input draws, the pipe and a first call's one-time costs, and read a 2.6 ms call at 5 ms or more on an H100, so
a quarter of KernelBench's level 2 got under 0.8 of the repetitions do_bench's budget gives it
(docs/BENCHMARKS_HISTORY.md). The repetitions are then run in blocks, the reference's and the candidate's in turn, so
the two medians come from the same stretch of time: on an H100 a passing episode (a few hundred milliseconds of slower
repetitions, of the device or of the host) moved one side's median alone by up to 21 % when each side was timed
in one run (docs/BENCHMARKS_HISTORY.md, "Timing side by side"). Each shape's timing is laid out on the device's
memory as it is once the timing lock is held (worker/memory.py, timing_layout); where there is no room for both
sides' timing sets at once, the reference is timed first and the candidate after it.

The reference is also timed with no repetition, and pinged, so the parent can tell its fixed cost per command from its
cost per repetition, and that cost from the pipe's, and calibrate its clock around the candidate's commands
(judge/wall.py). Seeds are drawn here, by the
parent, once both processes are loaded, correct and warm. Each block has a nonce of its own, drawn as the block is
sent: a repetition's inputs follow from its block's nonce, so nothing a process is told lets it compute a later
block's answers early (one call doing a whole block's work is inside that block's mean, which is what the parent
checks: judge/wall.py). Both sides' block b share its nonce, so the reference's repetition k of block b runs on the
inputs of the candidate's repetition k of block b, and its output there answers its check of the candidate's
(worker/timed_answers.py). The parent holds the device's timing lock around all of it, so its clock never counts a
wait for it.

Each block's timing command holds every repetition's outputs; its seal, sent with it and answered right behind it, hands
them over, on both sides alike. The parent's clock times the two apart: a seal longer than the reference's counts as
calls' work (judge/wall.py). On a GPU the parent then picks checked_per_block of the block's repetitions, and the
reference pins them at once, before the candidate is stopped (worker/pins.py); its pin's span beyond its pin of its own
counts as calls' work too. From then until the candidate's next command its processes are stopped (judge/pause.py), and
meanwhile the reference checks the picked outputs (all in a strict run) element by element: nothing the candidate does
after its block, in a later block or command, can change what is checked, and nothing in its process decides or knows
how it will be checked. A block holds no more repetitions than the device keeps outputs of at once (the layout's
`retained`); a shape needs more blocks where its outputs are large.

On a GPU both sides' repetitions hold the stream until their host has queued the call (worker/stream_hold.py), so
the events time the device's work, not the host thread's launches; the lead caps that hold, the same for both sides
(a call that synchronizes inside itself waits it out; where the hold cannot load, it is spun in full). It is sized
from the reference's rehearsal: LEAD_FACTOR times its issue time per call, which covers a process that issues the
same calls 2.6x slower (bench/probes/launch_bound.py), and PREPARE_FACTOR times its host time to draw the inputs and
flush. The hold came before those until 62836f6 and now follows them, so that part only loosens the cap.
"""

from __future__ import annotations

import secrets
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from evaluators.judge import bands, quiet_reads
from evaluators.judge.options import EvalOptions
from evaluators.judge.toolchain import device_kind
from evaluators.worker.device_lock import device_key, device_lock, host_lock

REHEARSAL_REPS = 5
# Blocks per side: each side's 100 ms budget of calls (plus the harness's work) falls into pieces of about ten
# milliseconds, shorter than the episodes they are meant to share. A block's first calls after the other process's
# pay for the switch: with two or three repetitions a block, a 2.7 ms conv3d's median rose 5.6 % above
# triton.testing.do_bench's on an H100, so a block has at least BLOCK_REPS where the repetitions allow. Blocks of five
# moved the medians of 53 shapes of 20-39 repetitions by -0.62 % to +0.69 % from blocks of ten (H100); blocks of ten
# left those shapes two or three blocks, whose band is the range a single slow block sets: 7 of 100 level-1 rows read
# 2.5-5.3 % wide on one side that way (docs/BENCHMARKS_HISTORY.md).
TIMING_BLOCKS = 16
BLOCK_REPS = 5
# A shape whose reference's own figure still reaches more than WIDE_BAND in its bootstrap (judge/bands.py, reach) after
# its blocks is given as many blocks again, up to TIMING_BLOCKS a side. Of levels 1 and 2 on two H200s (adaf0fb), 12
# rows were over 2 % wide, and in 11 of them the blocks' own band reached over 1 % before the two processes' floor
# (bench/identity_journals.py): eight had one block of four to seven read 3-88 % slow, the reference's each time, the
# rest a spread of 5 % between calls on both sides. Read from the reference's blocks alone, which the candidate neither
# times nor claims; where both sides spread alike the pair's band is about √2 times one side's, so the bar is 1 % / √2.
WIDE_BAND = 0.007
LEAD_FACTOR, PREPARE_FACTOR, LEAD_CAP_MS = 3.0, 1.5, 2.0
# The reference's command with no repetition, and its ping, are each read this many times after its last block.
CALIBRATION_READINGS = 3
# Repetitions of each block the reference compares, picked after the block: checking all of them made a warm
# evaluation of row_softmax (seven timed shapes of up to 500 repetitions) take 14.2 s against 5.1 s on an H100. A shape
# of fewer blocks has more of each checked, CHECKED_PER_BLOCK * TIMING_BLOCKS at least (or all): a candidate that
# reads slow in its warm-up or rehearsal, to be given two blocks, gets no fewer of its outputs read.
CHECKED_PER_BLOCK = 2
# Before the reference's next timing command after one of the candidate's, the parent waits LINGER_PER_LAG times what
# the candidate's stop waited for a thread still in a system call (judge/pause.py), and no less than MIN_GUARD_S.
# Giving 8-24 GiB of device memory back took 3-18 ms of host time, and the driver's clearing slowed reads for up to
# 5.9 times that after the call (bench/probes/free_trace.py, H200); a call that ends before the stop is seen (about
# 0.4 GiB in the parent's reaction time) leaves under 1 ms of it.
# No more than GUARD_CAP_S: the clearing of a whole H200's memory lasts about 0.38 s (worker/device_idle.py), and a
# candidate keeping many threads running through its stop would otherwise hold the evaluation for their sum.
LINGER_PER_LAG, MIN_GUARD_S, GUARD_CAP_S = 8.0, 2e-3, 1.0
_RANDOM = secrets.SystemRandom()
_SLEEP, _CLOCK = time.sleep, time.monotonic  # _CLOCK: the host's, which the reference's drain reads too
# The reference's rehearsal holds the stream this little (its host times size the lead): enough to calibrate the spin
# where the released hold cannot load.
_CALIBRATE_MS = 1e-3


@dataclass
class Span:
    """One side's timing commands seen from the parent: their repetitions, and how many commands they were.

    `seconds` is the sum of each command's span, from sending it to having its reply.
    """

    seconds: float
    reps: int
    commands: int = 1


@dataclass
class Block:
    """One timing command of one side: its repetitions, its nonce, and its span on the parent's clock (s)."""

    first: int
    reps: int
    nonce: int
    seconds: float = 0.0
    seal_s: float = 0.0  # its seal's span, from the block's reply to the seal's (Side.block)
    pin_s: float = 0.0  # the reference's pin of its picked outputs, right behind the seal (Side.block)
    picked: list[int] | None = None  # the offsets pinned for the check; None where nothing is pinned
    pin: dict = field(default_factory=dict)  # the pin's facts (worker/pins.py): what it opened, in how long


@dataclass
class ShapeTiming:
    """One side's timing of one shape as the parent commanded and saw it."""

    reps: int
    facts: dict = field(default_factory=dict)  # the replies joined: times_ms, label
    span: Span | None = None
    blocks: list[Block] = field(default_factory=list)  # in the order sent
    side_stream_ms: float = 0.0
    compiled: dict | None = None
    fixed_s: float = 0.0  # the reference's timing command with no repetition, on the parent's clock (the least read)
    floor_s: float = 0.0  # the reference's answer to a command it does nothing for (the least read)
    lock_wait_s: float = 0.0  # how long the timing waited for the device's and the host's locks
    host_held: bool = False  # timed with no worker starting or first calling kernels on the machine's other GPUs
    layout: dict = field(default_factory=dict)  # the timing's layout (worker/memory.py, TimingLayout)
    mismatch: list | None = None  # the reference's check: [repetition, mismatch] of the first that differs
    drained_ms: float = 0.0  # how long the reference waited, before its commands, for what the candidate left to end
    busy_ms: float = 0.0  # of which other work on the device: the candidate's, queued before its stop
    ended_stopped: int = 0  # the candidate's processes that ended while stopped (judge/pause.py)


class DeviceBusy(Exception):
    """Other work stayed on the device through the reference's wait before one of its timing commands."""


def repetitions(estimate_ms: float, device: str, options: EvalOptions) -> int:
    """Repetitions for a call of `estimate_ms`.

    A strict re-evaluation is timed by this same rule: its figure is the one that counts once it clears, so the
    parent's clock must vouch for it as tightly as for the first's (wall.slack_ms spreads a fixed jitter over the
    repetitions, and one block a side draws no noise band).
    """
    if device_kind(device) == "cpu":
        return options.cpu_reps
    # An estimate at or below zero (a warm-up faster than its clock, a parent's figure less the harness) is taken as
    # a microsecond call's.
    return int(min(max(options.rep_ms / max(estimate_ms, 1e-3), options.min_reps), options.max_reps))


def honest_reps(device: str, options: EvalOptions) -> Callable[[float], int]:
    """repetitions() for calls of a given length on `device`: what the parent's clock spreads its jitter over."""
    return lambda estimate_ms: repetitions(estimate_ms, device, options)


def block_count(reference_reps: int, candidate_reps: int, device: str, retained: int) -> int:
    """Blocks a side: on a GPU up to TIMING_BLOCKS of at least BLOCK_REPS; on the CPU one repetition a block.

    More where a block of the side with fewer repetitions would hold more outputs than `retained`; the other side
    is then cut to what its blocks hold (held_reps).
    """
    fewest = min(reference_reps, candidate_reps)
    blocks = max(1, min(TIMING_BLOCKS, fewest // BLOCK_REPS)) if device_kind(device) == "cuda" else fewest
    return max(blocks, -(-fewest // max(retained, 1)))


def held_reps(timing: ShapeTiming, blocks: int, retained: int) -> None:
    """A side's repetitions cut to what `blocks` blocks of at most `retained` held outputs each hold."""
    timing.reps = min(timing.reps, blocks * retained)


def lead_ms(rehearsal: dict | None) -> float:
    """The stream's hold before each repetition (ms), from the host times of the reference's rehearsal."""
    issued, prepared = (rehearsal or {}).get("issue_ms"), (rehearsal or {}).get("prepare_ms")
    if not (issued and prepared):
        return 0.0
    lead = LEAD_FACTOR * statistics.median(issued) + PREPARE_FACTOR * statistics.median(prepared)
    return min(lead, LEAD_CAP_MS)


def rehearsed_reps(meta: dict, per_rep_ms: float, planned: int, device: str, options: EvalOptions) -> int:
    """The repetitions a rehearsal's event times give; `planned` (the warm-up's) where they are not durations.

    A process's times are its claim, so their median is held within what the parent's clock saw: no more than the
    rehearsal's span per repetition `per_rep_ms` (a claim of slow calls buys no fewer repetitions than the rehearsal's
    length gives; one slept through buys the least, as a slow warm-up can, and checked_per_block then reads as many
    outputs), and no less than a tenth of it (a claim of fast calls multiplies the timing's length by ten at most).
    """
    times = meta.get("times_ms")
    if not (isinstance(times, list) and times and all(map(is_duration, times)) and per_rep_ms > 0):
        return planned
    return repetitions(min(max(statistics.median(times), per_rep_ms / 10), per_rep_ms), device, options)


# The longest time per call a reply may carry (a day): beyond it the reply is malformed, so every ratio stays finite
# (Python reads a JSON integer of any size, and arithmetic on one can overflow).
LONGEST_MS = 86_400_000.0


def is_duration(value) -> bool:
    """Whether a figure a worker sent is a finite, non-negative number of at most a day (a bool or a string is not).

    Compared, not converted: math.isfinite raises on an integer too large for a float (NaN and infinities fail the
    comparison).
    """
    return type(value) in (int, float) and 0 <= value <= LONGEST_MS


def issue_median(issued, reps: int) -> float | None:
    """The median of a timing's host issue times (ms), or None where the reply did not give one per repetition."""
    if not (isinstance(issued, list) and len(issued) == reps and reps and all(map(is_duration, issued))):
        return None
    return statistics.median(issued)


def split(reps: int, blocks: int) -> list[tuple[int, int]]:
    """(first repetition, count) of each block: `reps` in `blocks` nearly equal runs."""
    bounds = [reps * b // blocks for b in range(blocks + 1)]
    return [(bounds[b], bounds[b + 1] - bounds[b]) for b in range(blocks)]


def block_times(side, counted: list[float] | None = None) -> list[list[float]]:
    """A side's own times, block by block (they are joined block after block), each raised by `counted[b]`.

    `counted`: the work per call of each block that its timer did not see and the parent counts (wall.Verdict.counted).
    """
    times, at, out = side.facts["times_ms"], 0, []
    for b, block in enumerate(side.blocks):
        extra = counted[b] if counted else 0.0
        out.append([t + extra for t in times[at : at + block.reps]])
        at += block.reps
    return out


class Side:
    """One process's timing of one shape: its warm-up, its plan, its blocks and the replies joined."""

    def __init__(self, call, shape: int, device: str, options: EvalOptions, memory: dict, keep: bool = False):
        self.call, self.shape, self.device, self.options = call, shape, device, options
        # pin(first, reps, seal reply) -> (offsets, Reply): the reference's pin of the block's picked outputs
        self.pin = None
        # watch(): the reference's watch over this side's host windows, armed before each of its blocks (_pins)
        self.watch = None
        self.memory = memory
        self.keep = keep  # the reference keeps each block's outputs for its check of the candidate's (timed_answers)
        self.seed = secrets.randbits(30)
        self.warm = 0
        self.timing: ShapeTiming | None = None
        self.lead_ms = 0.0
        self.last_reply: dict = {}

    def warm_up(self) -> None:
        """Warm the process up at the shape and plan its timing from the seconds per call the warm-up showed.

        A first call sizes the rest of the warm-up (on a GPU; the CPU's interpreter makes one). Each warm-up
        command's span also holds an input draw and the pipe: the difference of the two spans is calls alone.
        """
        call, options = self.call, self.options
        first = call({"cmd": "warm", "shape": self.shape, "calls": 1, "seed": self.seed}, "warmed")
        warm = int(min(max(options.warmup_ms / max(first.span * 1e3, 1e-3), 1), 1000))
        per_call = first.span
        if warm > 1 and device_kind(self.device) == "cuda":
            rest = call({"cmd": "warm", "shape": self.shape, "calls": warm - 1, "seed": self.seed}, "warmed")
            per_call = (rest.span - first.span) / (warm - 2) if warm > 2 else 0.0
            per_call = per_call if per_call > 0 else rest.span / (warm - 1)
        else:
            warm = 1
        self.warm = warm
        self.timing = ShapeTiming(repetitions(per_call * 1e3, self.device, options))

    def command(self, first: int, reps: int, nonce: int, hold: bool = True) -> dict:
        """The timing command of repetitions first..first+reps.

        Held, every repetition's outputs are kept for the block's seal, which hands them over (block). The side's
        timing sets live until its next command of another kind (worker/session.py).
        """
        return {
            "cmd": "time", "shape": self.shape, "first": first, "reps": reps, "nonce": nonce, "hold": hold,
            "keep": hold and self.keep, "lead_ms": self.lead_ms,
            "timing_sets": self.memory["timing_sets"], "held_on_device": self.memory["retained_on_device"],
        }  # fmt: skip

    def rehearse(self, lead: float) -> dict | None:
        """On a GPU, a run unchecked and untimed by anyone, holding the stream `lead` ms; its reply's facts.

        The allocator's blocks, the events and the spin's calibration then exist before the parent's clock starts,
        on both sides alike. It holds no outputs: no one reads them.
        """
        if device_kind(self.device) != "cuda":
            return None
        self.lead_ms = lead
        rehearsal = self.command(0, min(self.timing.reps, REHEARSAL_REPS), secrets.randbits(30), hold=False)
        reply = self.call(rehearsal, "timing")
        per_rep_ms = reply.span * 1e3 / max(rehearsal["reps"], 1)
        self.timing.reps = rehearsed_reps(reply.meta, per_rep_ms, self.timing.reps, self.device, self.options)
        return reply.meta

    def block(self, first: int, reps: int, nonce: int) -> None:
        """One block of repetitions on inputs from `nonce`, its seal, and its pin; the reply joined to the earlier's.

        The seal (the held outputs' handoff) is sent with the block and answered right behind it, so the parent's clock
        times the two apart with no pause between them (judge/wall.py weighs the seal's span). Where outputs stay on
        the device, the reference pins the ones the check will read as soon as the seal has answered, before the
        candidate's processes are stopped (`call`'s third argument runs then; worker/pins.py). The reference's watch
        over the candidate's host windows is armed before the block and begins as the block marks its end (_pins).
        """
        seal = ({"cmd": "seal", "shape": self.shape}, "sealed")
        command = self.command(first, reps, nonce) | {"then": seal}
        pinned = []
        pin = self.pin
        reply = self.call(command, "timing", None if pin is None else lambda r: pinned.append(pin(first, reps, r.then)))
        seal = reply.then  # an "error" for either was raised by `call` (the candidate's, or the reference's)
        facts = self.timing.facts
        for key in ("times_ms", "issue_ms", "prepare_ms", "hold_ms", "whole_ms"):
            values = reply.meta.get(key)
            # Joined as sent: a block short of its repetitions leaves the whole short (judged malformed).
            facts[key] = facts.get(key, []) + (values if isinstance(values, list) else [])
        facts.setdefault("label", reply.meta.get("label"))
        block = Block(first, reps, nonce, reply.span, seal.span)
        if pinned:
            ((block.picked, pin_reply),) = pinned
            block.pin_s, block.pin = pin_reply.span, pin_reply.meta
        self.timing.blocks.append(block)
        # What the check opens is the seal's handoff; a reply that carries one itself is ignored.
        self.last_reply = {k: v for k, v in reply.meta.items() if k != "handed"} | seal.meta

    def finish(self, reference: bool) -> ShapeTiming:
        """The side's span; for the reference its command with no repetition; the side-stream probe on a GPU."""
        timing = self.timing
        timing.span = Span(sum(block.seconds for block in timing.blocks), timing.reps, len(timing.blocks))
        if reference:
            # The least of a few readings: the process is trusted, so only a passing delay reads high.
            empty = [self.command(0, 0, secrets.randbits(30), hold=False) for _ in range(CALIBRATION_READINGS)]
            timing.fixed_s = min(self.call(command, "timing").span for command in empty)
            timing.floor_s = min(self.call({"cmd": "ping"}, "pong").span for _ in range(CALIBRATION_READINGS))
        if device_kind(self.device) == "cuda":
            probe = self.call({"cmd": "probe", "shape": self.shape, "seed": secrets.randbits(30)}, "probe")
            timing.side_stream_ms = probe.meta.get("side_stream_ms")
        return timing


def more_runs(reference: Side, candidate: Side, runs: list, device: str) -> list:
    """Blocks to run after `runs` where the reference's figure reaches past WIDE_BAND: as many again, to TIMING_BLOCKS.

    None off the GPU (a block there is one repetition), once TIMING_BLOCKS ran, or for a host-bound call. Read from the
    reference's blocks alone: the candidate's times are its claims, and a candidate that could veto more blocks once it
    had seen the reference's slow ones (its host clock sees the reference's turns) kept them in its baseline, 1.5x
    and significant on a call as fast as the reference's (a red team in simulation,
    tests/evaluators/redteam/test_redteam_more_blocks.py). Whether to go on is read from the band's width alone,
    never from where its figure lies; the median of more blocks sets a slow one aside. The new blocks are the first
    ones' sizes again, numbered on.
    """
    room = TIMING_BLOCKS - len(runs)
    if device_kind(device) != "cuda" or room <= 0:
        return []
    timing = reference.timing
    times = timing.facts.get("times_ms")
    # A call issued slower than it runs is banded by the two processes' host speeds (bands.across_processes), which
    # more blocks do not narrow: level 3's RNNs, given more, ran four times their timing on one H200.
    issued = issue_median(timing.facts.get("issue_ms"), len(times))
    if issued is not None and issued > statistics.median(times):
        return []
    reach = bands.reach(block_times(timing))
    if reach is None or reach <= WIDE_BAND:
        return []
    added = []
    for (_, ours), (_, theirs) in runs[:room]:
        added.append(((reference.timing.reps, ours), (candidate.timing.reps, theirs)))
        reference.timing.reps += ours
        candidate.timing.reps += theirs
    return added


def _guard_s(stopper) -> float:
    """What the reference waits before its next timing command, after the candidate's stop."""
    return min(max(MIN_GUARD_S, LINGER_PER_LAG * stopper.lag_s), GUARD_CAP_S)


def _few(values) -> str:
    """The first and last of a list of readings, for a message."""
    values = values if isinstance(values, list) else []
    return ", ".join(f"{v:.3f}" for v in values) if len(values) <= 4 else f"{values[0]:.3f} ... {values[-1]:.3f}"


def _rehearse_reference(reference: Side) -> float:
    """The reference's rehearsal, which sizes the lead both sides then hold (ms); the reference's set to it."""
    reference.lead_ms = lead_ms(reference.rehearse(_CALIBRATE_MS))
    return reference.lead_ms


def checked_per_block(blocks: int) -> int:
    """Repetitions checked in each of a shape's `blocks`: at least CHECKED_PER_BLOCK * TIMING_BLOCKS in all."""
    return max(CHECKED_PER_BLOCK, -(-CHECKED_PER_BLOCK * TIMING_BLOCKS // max(blocks, 1)))


def picked(reps: int, blocks: int) -> list[int]:
    """The offsets of a block's repetitions pinned for the check: checked_per_block(blocks) of them, at random.

    Picked by the parent once the block has answered, so nothing the candidate did could aim at the ones read: one
    wrong on a share f of its repetitions passes a shape with probability about
    (1 - f) ** (CHECKED_PER_BLOCK * TIMING_BLOCKS). A strict run checks the others too, after the pin.
    """
    offsets, checked = list(range(reps)), checked_per_block(blocks)
    return offsets if reps <= checked else sorted(_RANDOM.sample(offsets, checked))


def _check_block(reference_call, where, candidate: Side, layout: dict, blocks: int, last: bool, strict: bool) -> None:
    """The reference's check of the candidate's latest block, its processes stopped; the first mismatch kept.

    `where(reply, count)` is where the reference opens what the candidate's reply handed over (judge/evaluate.py);
    `last`: the reference is done timing this shape. Every repetition of the block was handed over; the check reads
    those its pin took (on the device) or picks them now (picked), and in a strict run every other one too. Work the
    candidate left running could still finish an unpinned repetition by then, but not knowing which were pinned, it
    had to finish them all before the pin to pass.
    """
    timing, block = candidate.timing, candidate.timing.blocks[-1]
    pinned = block.picked if block.picked is not None else picked(block.reps, blocks)
    # A wrong candidate is timed to the end, so both workers finish the shape as planned; its later blocks go
    # unchecked, but their check command still comes: the reference lets go of what the block shared on the device
    # (device_handoff.share_outputs), and at the last one gives its memory back.
    checked = list(range(block.reps)) if strict else pinned
    checked = [] if timing.mismatch is not None else checked
    handed = where(candidate.last_reply, block.reps)
    # Let go of by the reference unopened: the pinned ones' counts go as the pin's tensors are dropped.
    unread = [k for k in range(block.reps) if k not in checked and k not in (block.picked or ())]
    command = {
        "cmd": "check_reps", "shape": candidate.shape, "reps": [block.first + k for k in checked],
        "blocks": [[block.first, block.reps, block.nonce]], "held_on_device": layout["retained_on_device"],
        "last": last, "pid": handed["pid"], "fds": [handed["fds"][k] for k in checked],
        "unread": [block.first + k for k in unread], "unread_fds": [handed["fds"][k] for k in unread],
    }  # fmt: skip
    mismatch = reference_call(command, "comparison").meta.get("mismatch")
    timing.mismatch = timing.mismatch or mismatch


def _pins(reference_call, where, shape: int, blocks: int, post=None, channel=None):
    """(the reference's pin of its own blocks, its pin of the candidate's, the watch): Side.pin, Side.watch.

    Each pin picks the block's repetitions the check reads (picked) and has the reference sample them, every
    descriptor of the block read first; the reference's own pin of as many of its own outputs is what the candidate's
    is weighed against (judge/wall.py). `post(command)`, where given, sends the reference a command with no reply:
    the watch (worker/window_watch.py), right before its own pin, and for the candidate's block armed on the
    candidate's marks `channel` (process.Worker.marks) before the block is sent: it begins as the block's mark of its
    end arrives there. Begun from the parent as the reply arrived, it began a median 1.2 ms (0.55-37 ms) after the
    parent had read the reply on an H200, and a spin of 0.5 ms queued after the block's last synchronize was seen in
    no block (bench/probes/window_reach.py). The pin ends it and says what it saw, and whether the mark came.
    """
    command = {"cmd": "watch", "shape": shape}
    watch = None if post is None else (lambda: post(command))
    armed = None if post is None or channel is None else (lambda: post(command | {"on": channel}))

    def own(first: int, reps: int, _seal) -> tuple:
        offsets = picked(reps, blocks)
        if watch is not None and first > 0:
            # Not the shape's first: a kernel the pin runs for the first time in the process loads as it is first
            # launched, which waits for the whole device, the watcher included, until its cap (1 s a shape on
            # level 1's large outputs, two H200s). The candidate's pins come after it, their kernels loaded.
            watch()
        return offsets, reference_call({"cmd": "pin", "shape": shape, "own": offsets, "first": first}, "pinned")

    def theirs(first: int, reps: int, seal) -> tuple:
        offsets, handed = picked(reps, blocks), where(seal.meta, reps)
        command = {"cmd": "pin", "shape": shape, "first": first, "reps": [first + k for k in offsets],
                   "pid": handed["pid"], "fds": handed["fds"]}  # fmt: skip
        return offsets, reference_call(command, "pinned")

    return own, theirs, armed


def time_side_by_side(reference_call, candidate_call, shape: int, device: str, options: EvalOptions, memory: dict,
                      room, quiet, where, compiled=None, post=None, channel=None):  # fmt: skip
    """(the reference's ShapeTiming, the candidate's) at one shape, their blocks in turn where memory allows.

    `*_call(command, event)` sends one command to that process and returns its Reply. `room()` lays the shape's
    timing out (a TimingLayout's fields) once the lock is held: no other evaluation's timing tensors come or go on
    the device until it is done. `quiet()` is a context in which the candidate's processes are stopped (a
    judge/pause.py Stopper); they run only while the candidate answers a command. `where(reply, count)` says where
    the reference opens the `count` outputs a candidate's reply handed over. `compiled(side)`, if given, times
    torch.compile(reference) once the reference is warm (the reference's Side: its warm-up count and seed). It runs
    with the host's lock held as a timing: other GPUs of this machine may time too, but no worker starts and no
    problem's kernels are first called on any of them meanwhile (worker/device_lock.py says why). `post(command)`
    sends the reference a command it does not answer (its watch, _pins); without it no block is watched.
    `channel`: the candidate's marks of its blocks' ends (process.Worker.marks); without it the candidate's blocks
    are not watched.
    """
    waited = time.perf_counter()
    with (
        device_lock(options.cache_dir, device_key(device), options.lock_timeout_s),
        host_lock(options.cache_dir, timing=True) as had_host,
        quiet() as stopper,
    ):
        waited = time.perf_counter() - waited

        guard = [_guard_s(stopper), time.perf_counter()]  # (seconds to wait, since when) before the reference's turn
        stopped = [_CLOCK()]  # when the candidate's processes were last stopped: what it gave back clears from then
        drained, busy = [], []
        key, pending, ended = device_key(device), [], [0]  # this stop's trusted reads; its processes ended so far

        def keep_trusted() -> None:
            """Keep the trusted reads of the stop just ended, unless a process of the candidate's ended during it."""
            if stopper.ended == ended[0]:
                quiet_reads.add(key, pending)
            pending.clear()
            ended[0] = stopper.ended

        def drain() -> None:
            """The reference's wait until what the candidate left on the device ends (worker/device_idle.py)."""
            command = {"cmd": "drain", "shape": shape, "mark_ms": quiet_reads.mark(key), "quiet_since": stopped[0]}
            reply = reference_call(command, "drained").meta
            pending.extend(reply.get("trusted_ms") or [])
            drained.append(reply["waited_ms"])
            busy.append(reply.get("busy_ms", 0.0))
            if reply.get("idle") is False:
                raise DeviceBusy(f"the device was still busy after the reference waited {reply['waited_ms']:.0f} "
                                 f"ms (its reads of device memory, ms: {_few(reply.get('reads_ms'))})")  # fmt: skip

        def asked(command, event, after=None):
            if command["cmd"] == "time" and device_kind(device) == "cuda":
                # Both sides' blocks begin on a quiet device: the reference's own memory given back is waited out,
                # and the reference's read here is one the candidate cannot keep slow without slowing its own block.
                drain()
                if command["hold"] and candidate.watch is not None:
                    candidate.watch()  # after the drain: another command would end the armed watch's wait
                    command = command | {"mark": True}  # marked only where armed: no mark is left unread
            stopper.resume()
            keep_trusted()
            try:
                reply = candidate_call(command, event)
                if after is not None:
                    after(reply)  # the pin, before the stop: nothing the candidate's processes do is left uncounted
                return reply
            finally:
                stopper.stop()
                stopped[0] = _CLOCK()
                guard[:] = [_guard_s(stopper), time.perf_counter()]

        layout = room()
        memory, retained = memory | layout, layout["retained"]
        # Outputs held on the device are pinned by the reference right after each block (worker/pins.py).
        pinning = device_kind(device) == "cuda" and layout["retained_on_device"]

        def reference_timed(command, event, after=None):
            if command["cmd"] == "time" and device_kind(device) == "cuda":
                # The candidate is stopped, but what it left still runs: memory it gave back as it replied is being
                # cleared (the guard), and work it queued before runs on (the reference waits it out).
                rest = max(0.0, guard[0] - (time.perf_counter() - guard[1]))
                _SLEEP(rest)
                guard[0] = 0.0
                drained.append(rest * 1e3)
                drain()
            reply = reference_call(command, event)
            if after is not None:
                after(reply)
            return reply

        reference = Side(reference_timed, shape, device, options, memory, keep=layout["side_by_side"])
        candidate = Side(asked, shape, device, options, memory)
        if layout["side_by_side"]:
            for side in (reference, candidate):
                side.warm_up()
            candidate.rehearse(_rehearse_reference(reference))
            blocks = block_count(reference.timing.reps, candidate.timing.reps, device, retained)
            for side in (reference, candidate):
                held_reps(side.timing, blocks, retained)
            if pinning:
                reference.pin, candidate.pin, candidate.watch = _pins(reference_call, where, shape, blocks, post,
                                                                      channel)  # fmt: skip
            runs = list(zip(split(reference.timing.reps, blocks), split(candidate.timing.reps, blocks), strict=True))
            b = 0
            while b < len(runs):
                nonce = secrets.randbits(30)  # drawn now: no process knew it before its block
                # Turns in the order ABBA: a steady drift (clocks ramping) favours neither side.
                turns = [(reference, runs[b][0]), (candidate, runs[b][1])]
                for side, run in turns if b % 2 == 0 else turns[::-1]:
                    side.block(*run, nonce=nonce)
                if b == len(runs) - 1:
                    runs += more_runs(reference, candidate, runs, device)
                _check_block(reference_call, where, candidate, layout, blocks, b == len(runs) - 1, options.strict)
                b += 1
            reference_timing = reference.finish(reference=True)
        else:
            # One side's timing sets at a time: the reference's go back to the driver before the candidate's come.
            # Each side still in blocks, so both report the statistic the parent checks block by block. Block b of
            # either side has one nonce, as side by side; the reference keeps no outputs for its check here (the
            # device has no room for them), so it computes its answers again.
            nonces: dict[int, int] = {}
            reference.warm_up()
            lead = _rehearse_reference(reference)
            runs = split(reference.timing.reps, block_count(reference.timing.reps, reference.timing.reps, device,
                                                            retained))  # fmt: skip
            if pinning:
                reference.pin = _pins(reference_call, where, shape, len(runs), post)[0]
            for b, run in enumerate(runs):
                reference.block(*run, nonce=nonces.setdefault(b, secrets.randbits(30)))
            reference_timing = reference.finish(reference=True)
            candidate.warm_up()
            candidate.rehearse(lead)
            runs = split(candidate.timing.reps, block_count(candidate.timing.reps, candidate.timing.reps, device,
                                                            retained))  # fmt: skip
            if pinning:
                _, candidate.pin, candidate.watch = _pins(reference_call, where, shape, len(runs), post, channel)
            for b, run in enumerate(runs):
                candidate.block(*run, nonce=nonces.setdefault(b, secrets.randbits(30)))
                # What the check draws stays in the reference's cache until the last: given back after each block, its
                # clearing slowed the candidate's next one.
                _check_block(reference_call, where, candidate, layout, len(runs), b == len(runs) - 1, options.strict)
        candidate_timing = candidate.finish(reference=False)
        candidate_timing.lock_wait_s, candidate_timing.host_held = waited, had_host
        candidate_timing.drained_ms, candidate_timing.busy_ms = sum(drained), sum(busy)
        if compiled is not None:
            reference_timing.compiled = compiled(reference)
    keep_trusted()  # the last stop's, once its resume (as the lock is let go) has counted what ended
    candidate_timing.ended_stopped = stopper.ended
    reference_timing.layout = candidate_timing.layout = layout
    return reference_timing, candidate_timing
