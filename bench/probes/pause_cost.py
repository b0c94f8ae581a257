"""What stopping a candidate's processes during its timing costs (judge/pause.py).

`python bench/probes/pause_cost.py [PROBLEM] [--device cpu|cuda]` evaluates PROBLEM (default: row_softmax) with its
reference as the candidate, twice (a cold evaluation, then one with the reference warm), and times every pause: the
SIGSTOP to the candidate's group and every descendant, the wait until each of its threads reads as stopped, and the
SIGCONT that ends it (and, of it, the wait for the continued threads to have run). The candidate is stopped through a
shape's timing but for its own commands: a pause covers the reference's commands (its blocks, its check of each of the
candidate's) up to the candidate's next. Prints per evaluation the pauses' count, median and total, the candidate's
threads at the last pause, and the evaluation's wall time.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: kernelbench_eval

from kernelbench_eval import alias_candidate  # noqa: E402

from evaluators import evaluate  # noqa: E402
from evaluators.judge import pause  # noqa: E402
from kernels.problem import load_problem  # noqa: E402

PAUSES: list[float] = []  # seconds each pause cost the parent: stopping, and continuing
RESUMES: list[float] = []  # of which continuing (the wait until the threads have run: pause.AWAKE_S at most)
THREADS: list[int] = []
_stop, _resume = pause.Stopper.stop, pause.Stopper.resume


def timed_stop(self) -> None:
    start = time.perf_counter()
    _stop(self)
    THREADS.append(sum(len(pause._tasks(pid)) for pid in {self.root} | pause.descendants(self.root)))
    PAUSES.append(time.perf_counter() - start)


def timed_resume(self) -> None:
    # Every resume ends the stop before it (judge/timing_plan.py): the pause's cost is both.
    start = time.perf_counter()
    _resume(self)
    RESUMES.append(time.perf_counter() - start)
    PAUSES[-1] += RESUMES[-1]


pause.Stopper.stop, pause.Stopper.resume = timed_stop, timed_resume


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem", nargs="?", default="row_softmax")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    problem = load_problem(args.problem)
    for label in ("cold", "warm"):
        PAUSES.clear()
        RESUMES.clear()
        start = time.perf_counter()
        result = evaluate(problem, alias_candidate(problem.path.read_text()), args.device)
        wall = time.perf_counter() - start
        ms = [s * 1e3 for s in PAUSES]
        print(
            f"{label}: {result.status}, {len(ms)} pauses, median {statistics.median(ms):.2f} ms, total {sum(ms):.0f} ms"
            f" of {wall:.2f} s (continuing: median {statistics.median(RESUMES) * 1e3:.2f} ms, total"
            f" {sum(RESUMES) * 1e3:.0f} ms); the candidate had {THREADS[-1]} threads"
        )


if __name__ == "__main__":
    main()
