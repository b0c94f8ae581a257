"""Whether where an input set lies in device memory, or when it is timed, moves a shape's time.

`python bench/probes/timing_episodes.py PROBLEM SHAPE [--processes 3] [--sets 8] [--reps 100]` on a GPU: each process
holds `--sets` input sets of the shape at once and times the reference on each in turn, as the harness times a
repetition (cache flush, events, the device idle at its end). Prints each process's per-set medians. Sets that agree
within a process while processes disagree point at the process (its placement in memory, its host thread); sets
that disagree in a run of consecutive ones point at a passing episode of the machine.
"""

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

ONE_PROCESS = r"""
import statistics, sys, torch
sys.path.insert(0, sys.argv[1])
from kernels.problem import load_problem
from kernels.runtime import problem_runtime
problem = load_problem(sys.argv[2])
runtime = problem_runtime(problem, "cuda")
runtime.use_shape(next(s for s in problem.shapes("cuda") if s.name == sys.argv[3]))
model, count, reps = runtime.reference(42), int(sys.argv[4]), int(sys.argv[5])
sets = [runtime.inputs(1000 + i, "normal") for i in range(count)]
flush = torch.empty(512 << 20, dtype=torch.int8, device="cuda")
medians = []
with torch.no_grad():
    for _ in range(20):
        model(*sets[0])
    for args in sets:
        times = []
        for _ in range(reps):
            flush.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            model(*args)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        medians.append(statistics.median(times))
print(" ".join(f"{m:.4f}" for m in medians), f"max/min {max(medians) / min(medians):.3f}")
"""


def main() -> None:
    """Time one shape's reference per input set, in several fresh processes, and print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem", help="bundled name or problem file")
    parser.add_argument("shape", help="the shape's name, e.g. 'M=1024 H=4096'")
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--sets", type=int, default=8)
    parser.add_argument("--reps", type=int, default=100)
    args = parser.parse_args()
    print(f"{args.problem} {args.shape}: per-set medians (ms) in the order timed")
    for process in range(args.processes):
        command = [sys.executable, "-c", ONE_PROCESS, str(ROOT), args.problem, args.shape, str(args.sets)]
        done = subprocess.run([*command, str(args.reps)], capture_output=True, text=True, env=os.environ)
        lines = done.stdout.strip().splitlines() or [(done.stderr.strip().splitlines() or ["no output"])[-1]]
        print(f"process {process + 1}: {lines[-1]}", flush=True)


if __name__ == "__main__":
    main()
