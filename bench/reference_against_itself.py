"""Each problem's reference judged as its own candidate, per benchmark shape, in three passes.

`python bench/reference_against_itself.py PROBLEM... [--out DIR]` on a GPU (bundled names or problem files). Pass 1
is every problem's first evaluation in this process, pass 2 reuses the warm references (their timings cached) where
they are still warm, pass 3 starts after every warm reference is closed. Prints, per evaluation, the speedup and each
benchmark shape's reference/candidate medians (ms); writes reference_against_itself.jsonl. Every speedup should be
1.00: what moves is the timing's noise.
"""

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernelbench_eval import alias_candidate  # noqa: E402

from evaluators import EvalOptions, evaluate  # noqa: E402
from evaluators.judge import reference_pool  # noqa: E402
from kernels.problem import load_problem  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="+")
    parser.add_argument("--out", type=Path, default=Path("."))
    args = parser.parse_args()
    problems = [load_problem(spec) for spec in args.problems]
    with (args.out / "reference_against_itself.jsonl").open("w") as log:
        for run in (1, 2, 3):
            if run == 3:
                reference_pool.close_all()
            for problem in problems:
                started = time.perf_counter()
                result = evaluate(problem, alias_candidate(problem.path.read_text()), "cuda", EvalOptions())
                timed = [s for s in result.shapes if s.runtime_ms]
                shapes = [[s.name, s.baseline_ms, s.runtime_ms, s.spread, s.reps] for s in timed]
                row = {"pass": run, "problem": problem.name, "status": result.status, "speedup": result.speedup,
                       "wall_s": time.perf_counter() - started, "shapes": shapes}  # fmt: skip
                log.write(json.dumps(row) + "\n")
                medians = " ".join(f"{s[1]:.4g}/{s[2]:.4g}" for s in shapes)
                print(run, problem.name[:40], result.status, f"{result.speedup or 0:.3f}", medians, flush=True)


if __name__ == "__main__":
    main()
