"""Where an evaluation's seconds go, command by command, on the parent's clock.

`python bench/probes/timing_breakdown.py PROBLEM [--device cuda] [--runs 2] [--rehearsals]`: PROBLEM is a bundled name
or a problem file; the candidate is its reference (an identity ModelNew). Each run evaluates in this process, the first
with an empty cache directory, the next ones with what it left. Every command the parent sends a worker is timed where
it is sent (its span: the command, the worker's work and the reply), and so is each stop and continue of the
candidate's processes (stopped through a shape's timing but for its own commands). Prints, per run, the evaluator's
stages, then per (role, command) the count and seconds, largest first: the timing stage's parts are the `warm`,
`time`, `probe`, `check_reps` and `release` rows and the pauses. There are no `hand_over` rows now: each `time`
command hands its block's outputs over, and the reference's `check_reps` comes after every block. Wrapping adds a few
microseconds a command. --rehearsals also prints each side's rehearsal on a GPU, the reference's first: the lead it
held and its host times per repetition (the reference's sizes the lead).
"""

import argparse
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # kernelbench_eval

from kernelbench_eval import alias_candidate  # noqa: E402

from evaluators.judge import pause, process, timing_plan  # noqa: E402
from kernels.problem import load_problem  # noqa: E402

SPENT: dict[tuple[str, str], list[float]] = defaultdict(list)


def _timed_call(call):
    def timed(self, command, event, stage):
        start = time.perf_counter()
        try:
            return call(self, command, event, stage)
        finally:
            SPENT[(self.role, command.get("cmd", "?"))].append(time.perf_counter() - start)

    return timed


def _timed_pause(step, name: str):
    """Stopper.stop or Stopper.resume, its seconds kept under the candidate's `name` row."""

    def timed(self):
        start = time.perf_counter()
        try:
            step(self)
        finally:
            SPENT[("candidate", name)].append(time.perf_counter() - start)

    return timed


def _printed_rehearsal(rehearse):
    """Side.rehearse, printing the lead it held and its reply's host times per repetition (ms)."""

    def printed(self, lead):
        meta = rehearse(self, lead)
        if meta is not None:  # None: no rehearsal (the CPU)
            issue, prepare, times = (
                [round(v, 3) for v in meta.get(key) or []] for key in ("issue_ms", "prepare_ms", "times_ms")
            )
            hold = meta.get("stream_hold")
            print(f"  rehearsal: {hold} hold, lead {lead:.4f} ms, issue {issue}, prepare {prepare}, times {times}")
        return meta

    return printed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem", help="bundled name or problem file")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--rehearsals", action="store_true", help="print each side's rehearsal: lead and host times")
    args = parser.parse_args()
    if args.rehearsals:
        timing_plan.Side.rehearse = _printed_rehearsal(timing_plan.Side.rehearse)
    process.Worker.call = _timed_call(process.Worker.call)
    pause.Stopper.stop = _timed_pause(pause.Stopper.stop, "(stopping)")
    pause.Stopper.resume = _timed_pause(pause.Stopper.resume, "(continuing)")
    os.environ["KS_CACHE_DIR"] = tempfile.mkdtemp(prefix="timing-breakdown-")
    from evaluators import EvalOptions, evaluate

    problem = load_problem(args.problem)
    source = alias_candidate(problem.path.read_text())
    for run in range(args.runs):
        SPENT.clear()
        started = time.perf_counter()
        result = evaluate(problem, source, args.device, EvalOptions())
        wall = time.perf_counter() - started
        stages = ", ".join(f"{name} {seconds:.3f}" for name, seconds in result.stages.items())
        print(f"## run {run + 1} ({'cold' if run == 0 else 'cached'}): {result.status}, {wall:.3f} s; {stages}")
        for (role, cmd), spans in sorted(SPENT.items(), key=lambda item: -sum(item[1])):
            median = sorted(spans)[len(spans) // 2] * 1e3
            print(f"  {role:9} {cmd:14} {len(spans):4} x  {sum(spans):7.3f} s  (median {median:.2f} ms)")
        print(flush=True)


if __name__ == "__main__":
    main()
