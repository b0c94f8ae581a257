"""What stopping a candidate's processes around the reference's timing commands costs (judge/pause.py).

`python bench/probes/pause_cost.py [PROBLEM] [--device cpu|cuda]` evaluates PROBLEM (default: row_softmax) with its
reference as the candidate, twice (a cold evaluation, then one with the reference warm), and times every pause:
the SIGSTOP to the candidate's group and every descendant, the wait until each of its threads reads as stopped,
and, after the reference's command, the SIGCONT. Prints per evaluation the pauses' count, median and total, the
candidate's threads at the last pause, and the evaluation's wall time.
"""

import argparse
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: kernelbench_eval

from kernelbench_eval import alias_candidate  # noqa: E402

from evaluators import evaluate  # noqa: E402
from evaluators.judge import pause  # noqa: E402
from kernels.problem import load_problem  # noqa: E402

PAUSES: list[float] = []  # seconds each pause cost the parent: stopping, and continuing
THREADS: list[int] = []
_stopped = pause.stopped


@contextmanager
def timed_stop(root: int):
    start = time.perf_counter()
    with _stopped(root):
        THREADS.append(sum(len(pause._tasks(pid)) for pid in {root} | pause.descendants(root)))
        stopping = time.perf_counter() - start
        yield
        start = time.perf_counter()
    PAUSES.append(stopping + time.perf_counter() - start)


pause.stopped = timed_stop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem", nargs="?", default="row_softmax")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    problem = load_problem(args.problem)
    for label in ("cold", "warm"):
        PAUSES.clear()
        start = time.perf_counter()
        result = evaluate(problem, alias_candidate(problem.path.read_text()), args.device)
        wall = time.perf_counter() - start
        ms = [s * 1e3 for s in PAUSES]
        print(
            f"{label}: {result.status}, {len(ms)} pauses, median {statistics.median(ms):.2f} ms, total {sum(ms):.0f} ms"
            f" of {wall:.2f} s; the candidate had {THREADS[-1]} threads"
        )


if __name__ == "__main__":
    main()
