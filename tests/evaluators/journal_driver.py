"""Test helper, run as a process: judge six candidates of scale_shift into a journal through an executor.

`--die-after N` kills this driver (SIGKILL, no cleanup) once N evaluations are journaled; running it again
must submit only what the journal lacks. Prints "pending KEY..." first, then "judged KEY STATUS" per result.
"""

import argparse
import os
import signal
from pathlib import Path

from evaluators.executors import make_executor
from evaluators.executors.journal import EvalJob, Journal, judge
from evaluators.judge.options import EvalOptions
from kernels.problem import load_problem

HERE = Path(__file__).parent
CANDIDATES = ("torch_only", "wrong_shape", "raises", "no_modelnew", "import_error", "nan_output")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--journal", type=Path, required=True)
    parser.add_argument("--cluster", default="local")
    parser.add_argument("--die-after", type=int)
    args = parser.parse_args()
    problem = load_problem(HERE / "problems" / "scale_shift.py")
    options = EvalOptions(timing=False, timeout_s=60)
    jobs = {name: EvalJob(problem, (HERE / "candidates" / f"{name}.py").read_text(), options) for name in CANDIDATES}
    journal = Journal(args.journal)
    executor = make_executor(args.cluster, "cpu")
    print("pending", *(key for key in jobs if key not in journal), flush=True)
    for count, (key, outcome) in enumerate(judge(executor, jobs, journal), start=1):
        print("judged", key, getattr(outcome, "status", outcome), flush=True)
        if count == args.die_after:
            os.kill(os.getpid(), signal.SIGKILL)
    executor.close()


if __name__ == "__main__":
    main()
