"""Each problem's reference judged as its own candidate, per benchmark shape, in three passes.

`python bench/reference_against_itself.py PROBLEM... [--out DIR] [--root TREE]` on a GPU (bundled names or problem
files; --root runs another checkout's evaluator, an earlier commit, with this script; --no-pin leaves the timing
threads to the scheduler, as before the timing core). Pass 1
is every problem's first evaluation in this process, pass 2 reuses the warm references (their timings cached) where
they are still warm, pass 3 starts after every warm reference is closed. Prints, per evaluation, the speedup and each
benchmark shape's reference/candidate medians (ms); writes reference_against_itself.jsonl, with each shape's
timed repetitions of both sides and the events' tick. Every speedup should be 1.00: what moves is the timing's
noise. Ends with how many shape timings were off by more than 2 %, and how many evaluations carried
`timing_disputed`.
"""

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(sys.argv[sys.argv.index("--root") + 1]).resolve() if "--root" in sys.argv else Path(__file__).parents[1]
sys.path.insert(0, str(ROOT.resolve()))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernelbench_eval import alias_candidate  # noqa: E402

from evaluators import EvalOptions, evaluate  # noqa: E402
from evaluators.judge import reference_pool, verdicts  # noqa: E402
from kernels.problem import load_problem  # noqa: E402

RAW: list[tuple[list[float], list[float]]] = []  # (reference's, candidate's) times of each shape judged
_apply = verdicts.apply_shape_timing


def _kept(result, index, timing, reference, *args, **kwargs):
    RAW.append((reference.facts["times_ms"], timing.facts["times_ms"]))
    return _apply(result, index, timing, reference, *args, **kwargs)


verdicts.apply_shape_timing = _kept


def tick_ms(times: list[float]) -> float:
    """The smallest step between distinct times: the events' resolution, where a kernel's times share ticks."""
    steps = [b - a for a, b in zip(sorted(set(times)), sorted(set(times))[1:], strict=False)]
    return min(steps, default=0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="+")
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--root", type=Path, help="the checkout whose evaluator runs (default: this one)")
    parser.add_argument("--no-pin", action="store_true", help="leave the timing threads to the scheduler")
    args = parser.parse_args()
    options = EvalOptions(pin_timing=False) if args.no_pin else EvalOptions()
    ratios, disputed = [], 0
    problems = [load_problem(spec) for spec in args.problems]
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
                raw, RAW[:] = list(RAW), []
                row = {"pass": run, "problem": problem.name, "status": result.status, "speedup": result.speedup,
                       "wall_s": time.perf_counter() - started, "ended": time.time(), "shapes": shapes, "flags": flags,
                       "tick_ms": [tick_ms(r) for r, _ in raw], "times_ms": raw}  # fmt: skip
                ratios += [s[2] / s[1] for s in shapes]
                disputed += "timing_disputed" in flags
                log.write(json.dumps(row) + "\n")
                log.flush()
                figures = " ".join(f"{s[1]:.4g}/{s[2]:.4g}" for s in shapes)
                print(run, problem.name[:40], result.status, f"{result.speedup or 0:.3f}", figures, flags, flush=True)
    off = [r for r in ratios if abs(r - 1) > 0.02]
    worst = max(ratios, key=lambda r: abs(r - 1), default=1.0)
    print(f"{ROOT}: {len(off)} of {len(ratios)} shape timings off by more than 2 % (worst {worst:.3f}), "
          f"{disputed} evaluation(s) with timing_disputed")  # fmt: skip


if __name__ == "__main__":
    main()
