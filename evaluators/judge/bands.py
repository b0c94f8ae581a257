"""The noise band of a speedup, from the timing's own blocks: a change inside it is not called a gain.

Each side reports the median of its block means (judge/wall.py), and block b of the two sides ran at nearly the
same moment (their ABBA turns). The band is a bootstrap of that statistic: draw the blocks again with replacement
(block b of both sides together) and, where a side has few blocks, each drawn block's repetitions with replacement,
and take the two medians of block means again. The blocks carry the drift between them, the repetitions the noise
within one, so a timing of two long blocks still gets an honest spread. Where each block is one repetition and
there are few (the CPU's three), Student's t over the paired blocks' log ratios stands in for the bootstrap. The
band is the central 95 % of those ratios. Over several shapes the geometric mean is drawn jointly: one draw per
shape in each replicate. The draws come from a fixed seed, so one evaluation's band is the same every time.

What this band does not see is what differs between two processes and stays the same across one process's blocks
(docs/CONTRACTS.md): a band measured inside one evaluation cannot cover it, and is not widened to pretend it does.
"""

from __future__ import annotations

import math
import random
import statistics

REPLICATES = 500
LEVEL = 0.95
_SEED = 20261126
# No call is reported faster than this (CUDA events resolve about half a microsecond): a forged or empty time of 0
# still gives a finite speedup and band, and the roofline a finite rate (judge/verdicts.py).
RESOLUTION_MS = 1e-3


# From this many blocks a side, the blocks' own means carry the noise within them well enough: drawing their
# repetitions again changed little and cost about 90 ms a shape in Python.
BLOCKS_ALONE = 8


def _statistic(blocks: list[list[float]], means: list[float], drawn: list[int], rng: random.Random) -> float:
    """The median of block means over the drawn blocks; with few blocks, each block's repetitions drawn again."""
    if len(blocks) >= BLOCKS_ALONE:
        return statistics.median(means[i] for i in drawn)
    return statistics.median(statistics.fmean(rng.choices(blocks[i], k=len(blocks[i]))) for i in drawn)


def replicates(reference: list[list[float]], candidate: list[list[float]], rng: random.Random) -> list[float]:
    """REPLICATES bootstrap ratios reference / candidate (blocks paired where the two have as many)."""
    paired = len(reference) == len(candidate)
    reference_means, candidate_means = list(map(statistics.fmean, reference)), list(map(statistics.fmean, candidate))
    out = []
    for _ in range(REPLICATES):
        drawn = rng.choices(range(len(reference)), k=len(reference))
        other = drawn if paired else rng.choices(range(len(candidate)), k=len(candidate))
        out.append(
            _statistic(reference, reference_means, drawn, rng) / _statistic(candidate, candidate_means, other, rng)
        )
    return out


def band(ratios: list[float]) -> tuple[float, float]:
    """The central LEVEL of `ratios`."""
    ordered = sorted(ratios)
    tail = (1 - LEVEL) / 2
    return ordered[int(math.floor(tail * (len(ordered) - 1)))], ordered[int(math.ceil((1 - tail) * (len(ordered) - 1)))]


def t_replicates(logs: list[float], rng: random.Random) -> list[float]:
    """REPLICATES ratios drawn from Student's t over the paired blocks' log ratios: for a few one-repetition blocks.

    A bootstrap of three values cannot see how far a fourth could fall (the CPU times one repetition a block, three
    a side): the t distribution with n - 1 degrees of freedom is what so few paired differences honestly allow.
    """
    n = len(logs)
    centre, error = statistics.fmean(logs), statistics.stdev(logs) / math.sqrt(n)
    draws = []
    for _ in range(REPLICATES):
        t = rng.gauss(0.0, 1.0) / math.sqrt(rng.gammavariate((n - 1) / 2, 2.0) / (n - 1))
        draws.append(math.exp(centre + t * error))
    return draws


def shape_band(reference: list[list[float]], candidate: list[list[float]], speedup: float):
    """(the band of one shape's speedup, its replicates scaled to it), or (None, []) where no band can be drawn.

    `reference` and `candidate` are each side's times, block by block. `speedup` is the figure reported (after the
    parent's floor and the side-stream work): the replicates are scaled so their point maps onto it.
    """
    rng = random.Random(_SEED)
    pairs = min(len(reference), len(candidate))
    if pairs < 2:
        return None, []
    if pairs < BLOCKS_ALONE and max(map(len, reference + candidate)) == 1:
        logs = [math.log(statistics.fmean(r) / statistics.fmean(c)) for r, c in zip(reference, candidate, strict=False)]
        ratios, point = t_replicates(logs, rng), math.exp(statistics.fmean(logs))
    else:
        ratios = replicates(reference, candidate, rng)
        point = statistics.median(map(statistics.fmean, reference)) / statistics.median(
            map(statistics.fmean, candidate)
        )
    scaled = [r * speedup / point for r in ratios]
    return band(scaled), scaled


def reach(blocks: list[list[float]]) -> float | None:
    """How far one side's figure (the median of its block means) reaches in its own bootstrap, as a share of it.

    The wider side of the central LEVEL; None under two blocks. Each time is taken as RESOLUTION_MS at least.
    """
    if len(blocks) < 2:
        return None
    blocks = [[max(t, RESOLUTION_MS) for t in block] for block in blocks]
    means, rng = list(map(statistics.fmean, blocks)), random.Random(_SEED + 3)
    point = statistics.median(means)
    low, high = band([_statistic(blocks, means, rng.choices(range(len(blocks)), k=len(blocks)), rng) / point
                      for _ in range(REPLICATES)])  # fmt: skip
    return max(1 / low - 1, high - 1)


# Two processes timing the same code differ by more than either's blocks show (docs/BENCHMARKS_HISTORY.md). On
# KernelBench's levels 1 and 2, each reference judged as its own candidate on an H200 once neither side's timing memory
# went back to the driver next to the other's block: of 180 shapes whose own band was under 0.5 %, 90 % read within
# 0.3 % of 1.0 and all but two within 1.3 %. The two, 3D transposed convolutions at 0.945x and 0.958x (1.03x and 1.00x
# in another run), are left outside: a floor as wide as them would hide every other change. Their cuDNN kernel, one plan
# and one launch, runs up to 38 % apart by the memory state its process met (bench/probes/memory_state.py). A
# launch's cost on the device is fixed per process and spread 1.88-2.16 us between fresh processes on an H100, and a
# launch takes at least about 3 us to issue on the host: at those extremes, a tenth of the issue time. On the H200 the
# 28 shapes whose issue time was over a tenth of the call read within 1.23 % of 1.0, which a twentieth covers. Fitted
# on one run (another, at d9b0dbd, left 97 % of level 1 and 96 % of level 2 within 2 %).
# The launches' part stops growing at LAUNCH_CAP, where the share reaches a fifth: above it, in three runs of levels 1
# and 2 on H100s and two on an H200, no shape whose own band was under 0.5 % a side read more than 0.42 % from 1.0 (30
# readings, shares 0.2-1.0; bench/identity_journals.py), where a twentieth of the share held floors of 2-6 %.
PROCESS_BASE, LAUNCH_SHARE, LAUNCH_CAP = 0.01, 0.05, 0.01


def process_floor(issue_ms: float | None, call_ms: float) -> float:
    """The share two processes may differ by on one call: PROCESS_BASE, plus the launches' part where known."""
    launches = LAUNCH_SHARE * issue_ms / call_ms if issue_ms and call_ms > 0 else 0.0
    return PROCESS_BASE + min(launches, LAUNCH_CAP)


def with_process_floor(draws: list[float], speedup: float, floor: float) -> tuple[tuple[float, float], list[float]]:
    """The band and draws with the difference between two processes added: each draw moved by up to `floor`.

    An error of its own, uniform in log space within the floor, added to every draw: the band is then at least the
    floor wide on each side of the figure, and a narrower bootstrap is no longer read as a significant change. Every
    shape's draw k gets the same error (one seed): the two processes are the same for all shapes, so the geometric
    mean's band keeps it whole.
    """
    rng = random.Random(_SEED + 2)
    reach = math.log1p(floor)
    moved = [draw * math.exp(rng.uniform(-reach, reach)) for draw in draws]
    low, high = band(moved)
    return (min(low, speedup / (1 + floor)), max(high, speedup * (1 + floor))), moved


def across_processes(draws: list[float], ratio: float) -> tuple[tuple[float, float], list[float]]:
    """The band and draws widened by a host-speed ratio between the two processes, for a host-bound call.

    A call that issues slower than it runs is timed at its host thread's pace, and that pace differed up to 2.6x
    between fresh processes on one core (docs/CONTRACTS.md): the same code in two processes read 0.84-1.18x on
    KernelBench's RNNs on an H200, two of six runs outside their own bootstrap band. The harness does the same host
    work in both processes before every repetition (the input draw, the flush, the event), so the ratio of those
    times is the two processes' speed apart from the code timed. The band runs from the figure as measured to the
    figure with the processes' speeds evened out (each draw moved by a share of the ratio, drawn in log space, for
    the geometric mean's joint draws). Only host-bound calls are widened; the low end only falls and the high end
    only rises, so no report of a host time widens a band into a gain.
    """
    rng = random.Random(_SEED + 1)
    (low, high), (evened_low, evened_high) = band(draws), band([draw * ratio for draw in draws])
    moved = [draw * ratio ** rng.random() for draw in draws]  # for the geometric mean's joint draws
    return (min(low, evened_low), max(high, evened_high)), moved


def geomean_band(per_shape: list[list[float]]) -> tuple[float, float]:
    """The band of the geometric mean over shapes, from each shape's scaled replicates taken replicate by replicate."""
    logs = [sum(math.log(shape[k]) for shape in per_shape) / len(per_shape) for k in range(REPLICATES)]
    return band([math.exp(x) for x in logs])


def significant(low: float, high: float) -> bool:
    """Whether the band excludes no change (1.0)."""
    return not low <= 1.0 <= high
