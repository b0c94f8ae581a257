"""Whether work a candidate leaves on the device after its reply slows the reference, with and without the drain.

    python bench/probes/drain_wait.py [--runs 3] [--without-first]

Evaluates the honest Triton candidate and `leftover_kernel_after_reply` (the same kernel, plus about 20 ms of device
work queued by a thread after each timing block is handed over) on the test problem, each `--runs` times, once with
the reference's wait for an idle device (worker/device_idle.py) and once with the parent answering that wait itself,
at once. Prints each run's per-shape baselines (the reference's ms) and the drain time. Needs a CUDA GPU.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from evaluators import EvalOptions, evaluate  # noqa: E402
from evaluators.judge import reference_pool  # noqa: E402
from evaluators.judge.process import Reply  # noqa: E402
from tests.evaluators.conftest import PROBLEM, candidate  # noqa: E402

_timed = reference_pool.time_side_by_side


def without_drain(reference_call, *args, **kwargs):
    """The timing as it was before the drain: its wait answered at once by the parent."""

    def call(command, event):
        if command["cmd"] == "drain":
            return Reply("drained", {"waited_ms": 0.0}, 0.0, 0.0)
        return reference_call(command, event)

    return _timed(call, *args, **kwargs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--without-first", action="store_true", help="the runs without the drain first")
    args = parser.parse_args()
    for drain in (False, True) if args.without_first else (True, False):
        reference_pool.time_side_by_side = _timed if drain else without_drain
        for name in ("good_triton", "leftover_kernel_after_reply"):
            baselines, waits = [], []
            for _ in range(args.runs):
                result = evaluate(str(PROBLEM), candidate(name), "cuda", EvalOptions())
                assert result.status == "correct", result.message
                baselines.append([round(s.baseline_ms, 4) for s in result.shapes if s.baseline_ms])
                waits.append(round(result.stages.get("device_drain_wait", 0.0) * 1e3, 1))
            medians = [round(statistics.median(b[i] for b in baselines), 4) for i in range(len(baselines[0]))]
            print(f"drain={drain} {name}: baselines ms {medians} (runs {baselines}); drain waits ms {waits}")


if __name__ == "__main__":
    main()
