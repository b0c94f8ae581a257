"""Each problem's reference judged as its own candidate, per benchmark shape, in three passes.

`python bench/reference_against_itself.py PROBLEM... [--out DIR] [--root TREE] [--no-pin]` on a GPU (bundled names
or problem files; --root runs another checkout's evaluator, an earlier commit, with this script; --no-pin leaves
the timing threads to the scheduler, as before the timing core). Pass 1 is every problem's first evaluation in this
process, pass 2 reuses the warm references where they are still warm, pass 3 starts after every warm reference is
closed. Prints, per evaluation, the speedup and each benchmark shape's reference/candidate figures (ms); writes
reference_against_itself.jsonl, with each shape's timed repetitions of both sides, their side-stream probes, its
blocks and the events' tick. Every speedup should be 1.00: what moves is the timing's noise. Ends with how many shape
timings were off by more than 2 %, and how many evaluations carried `timing_disputed`.

`python bench/reference_against_itself.py --reanalyze JSONL[.gz]...` (anywhere) judges kept files' times again by this
checkout's rules (`judge/verdicts.py`: the medians, and the side-stream probe beyond the reference's). A file from
before the probes were kept gives them as each figure less its median: what the evaluator then added. Each shape
off by more than 2 % also gets its blocks compared (as many as the file kept, else as `judge/timing_plan.py` split them
before a block's outputs were capped): in how many the candidate's median is above the reference's, and the median
of the blocks' own ratios.
"""

import argparse
import gzip
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(sys.argv[sys.argv.index("--root") + 1]).resolve() if "--root" in sys.argv else Path(__file__).parents[1]
sys.path.insert(0, str(ROOT.resolve()))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernelbench_eval import alias_candidate  # noqa: E402

from evaluators import EvalOptions, evaluate  # noqa: E402
from evaluators.judge import reference_pool, timing_plan, verdicts, wall  # noqa: E402
from kernels.problem import load_problem  # noqa: E402

RAW: list[tuple[list[float], list[float]]] = []  # (reference's, candidate's) times of each shape judged
EXCESS: list[tuple[float, float]] = []  # reanalyzed: (candidate's probe over the reference's, runtime), ms
PROBES: list[tuple[float, float]] = []  # (reference's, candidate's) side-stream probe of each shape judged
BLOCKS: list[int] = []  # the candidate's timing blocks of each shape judged
_apply = verdicts.apply_shape_timing


def _kept(result, index, timing, reference, *args, **kwargs):
    # The rest passed as given: a --root checkout from before the check moved into the timing passes more.
    RAW.append((reference.facts["times_ms"], timing.facts["times_ms"]))
    PROBES.append((reference.side_stream_ms, timing.side_stream_ms))
    BLOCKS.append(len(getattr(timing, "blocks", [])))  # a --root tree from before timing blocks has none
    return _apply(result, index, timing, reference, *args, **kwargs)


def blocks_of(times: list[float], count: int) -> list[float]:
    """The median of each timing block, as timing_plan split the side's repetitions."""
    return [statistics.median(times[first : first + reps]) for first, reps in timing_plan.split(len(times), count)]


def offset_or_episode(reference: list[float], candidate: list[float], count: int | None) -> str:
    """How a missed shape's blocks compare, side by side, in `count` blocks (None: a file that kept none).

    One side above in nearly every block is an offset between the two processes, which taking turns cannot share;
    a drift or an episode leaves the blocks' own ratios near 1.
    """
    # Such a file's blocks held any number of outputs: no layout capped them.
    count = count or timing_plan.block_count(len(reference), len(candidate), "cuda", 1 << 30)
    ours, theirs = blocks_of(reference, count), blocks_of(candidate, count)
    above = sum(c > r for r, c in zip(ours, theirs, strict=True))
    paired = statistics.median(c / r for r, c in zip(ours, theirs, strict=True))
    return f"candidate above in {above} of {count} blocks, blocks' median ratio {paired:.3f}"


def reanalyze(path: Path) -> list[float]:
    """Each kept shape's candidate/reference ratio by this checkout's rules; how each miss's blocks compare."""
    ratios = []
    text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    for line in text.splitlines():
        row = json.loads(line)
        probes = row.get("probes_ms") or [
            (s[1] - verdicts.median_and_spread(r)[0], s[2] - verdicts.median_and_spread(c)[0])
            for s, (r, c) in zip(row["shapes"], row["times_ms"], strict=True)
        ]
        counts = row.get("blocks") or [None] * len(row["times_ms"])
        for (r, c), (r_probe, c_probe), count in zip(row["times_ms"], probes, counts, strict=True):
            baseline, runtime = verdicts.median_and_spread(r)[0], verdicts.median_and_spread(c)[0]
            if row.get("probes_ms"):
                EXCESS.append((c_probe - r_probe, runtime))
            ratios.append((runtime + wall.side_stream_counted(c_probe, r_probe, runtime)) / baseline)
            if abs(ratios[-1] - 1) > 0.02:
                print(f"  pass {row['pass']} {row['problem']}: {ratios[-1]:.3f}, {offset_or_episode(r, c, count)}")
    return ratios


def probe_noise() -> str:
    """How far honest candidates' kept probes read above the reference's: what the probe's noise band must cover."""
    over = [e for e, _ in EXCESS if e > 0.001]
    short = max((e for e, runtime in EXCESS if runtime < 0.25), default=0.0)
    beyond = [runtime for e, runtime in EXCESS if e > 0.0025]
    where = f"only on calls of at least {min(beyond):.3g} ms ({len(beyond)})" if beyond else "in none"
    return (
        f"the candidate's probe over the reference's, in {len(EXCESS)} shape timings with kept probes: over 1 us in "
        f"{len(over)}, at most {short * 1e3:.2f} us on calls under 0.25 ms; over 2.5 us {where}"
    )


def summary(ratios: list[float]) -> str:
    off = [r for r in ratios if abs(r - 1) > 0.02]
    worst = max(ratios, key=lambda r: abs(r - 1), default=1.0)
    return f"{len(off)} of {len(ratios)} shape timings off by more than 2 % (worst {worst:.3f})"


verdicts.apply_shape_timing = _kept


def tick_ms(times: list[float]) -> float:
    """The smallest step between distinct times: the events' resolution, where a kernel's times share ticks."""
    steps = [b - a for a, b in zip(sorted(set(times)), sorted(set(times))[1:], strict=False)]
    return min(steps, default=0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="*")
    parser.add_argument(
        "--reanalyze", type=Path, nargs="+", help="kept jsonl files to judge again by this checkout's rules"
    )
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--root", type=Path, help="the checkout whose evaluator runs (default: this one)")
    parser.add_argument("--no-pin", action="store_true", help="leave the timing threads to the scheduler")
    args = parser.parse_args()
    if args.reanalyze:
        for path in args.reanalyze:
            print(f"{path}, by {ROOT}'s rules: {summary(reanalyze(path))}")
        print(probe_noise())
        return
    options = EvalOptions(pin_timing=False) if args.no_pin else EvalOptions()
    ratios, disputed = [], 0
    problems = [load_problem(spec) for spec in args.problems]
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "reference_against_itself.jsonl").open("w") as log:
        for run in (1, 2, 3):
            if run == 3:
                reference_pool.close_all()
            for problem in problems:
                started = time.perf_counter()
                result = evaluate(problem, alias_candidate(problem.path.read_text()), "cuda", options)
                timed = [s for s in result.shapes if s.runtime_ms]
                shapes = [[s.name, s.baseline_ms, s.runtime_ms, s.spread, s.reps] for s in timed]
                flags = [f.code for f in result.flags]
                raw, probes, blocks = list(RAW), list(PROBES), list(BLOCKS)
                RAW[:], PROBES[:], BLOCKS[:] = [], [], []
                row = {"pass": run, "problem": problem.name, "status": result.status, "speedup": result.speedup,
                       "wall_s": time.perf_counter() - started, "ended": time.time(), "shapes": shapes, "flags": flags,
                       "tick_ms": [tick_ms(r) for r, _ in raw], "times_ms": raw, "probes_ms": probes,
                       "blocks": blocks}  # fmt: skip
                ratios += [s[2] / s[1] for s in shapes]
                disputed += "timing_disputed" in flags
                log.write(json.dumps(row) + "\n")
                log.flush()
                figures = " ".join(f"{s[1]:.4g}/{s[2]:.4g}" for s in shapes)
                print(run, problem.name[:40], result.status, f"{result.speedup or 0:.3f}", figures, flags, flush=True)
    print(f"{ROOT}: {summary(ratios)}, {disputed} evaluation(s) with timing_disputed")


if __name__ == "__main__":
    main()
