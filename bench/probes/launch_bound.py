"""Whether a reference's timed median is set by the device or by its host thread's launches, process by process.

`python bench/probes/launch_bound.py PROBLEM... [--processes 6] [--reps 300] [--out DIR]` on a GPU. Written after the
bundled references, each timed against itself, still came out 2-3 % apart on a few sub-millisecond shapes, one
process above the other in nearly every block (`reference_against_itself.py --reanalyze`).

Fresh processes, one after another, each pinned to the evaluator's timing core, time every benchmark shape of each
problem's reference in the evaluator's loop (inputs drawn anew, the 512 MiB flush, events around the call, the
device idle after each repetition), in turns:
- unheld, as the evaluator timed it before it held the stream (worker/timing.py);
- held: a 1 ms spin after the flush, so every launch of the call is queued before the device reaches the start
  event: the device's time alone (the evaluator spins before the draw, for a lead sized from the reference);
- and, for both, the host's time to issue the call (nothing synchronizes inside it).
Prints per shape each figure's median over the processes, and its spread (largest over smallest process median);
writes launch_bound.json. Where the evaluator's figure spreads across processes and the held one does not, the
offsets come from the host's launches.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPIN_CYCLES = 2_000_000  # about 1 ms at an H100's clock: far longer than any launch sequence timed here


def child(names: list[str], reps: int) -> None:
    """One process: every shape of every problem, both ways, medians printed as one JSON line."""
    sys.path.insert(0, str(ROOT))
    import time

    import torch

    from evaluators.worker.timing_cpu import pinned, timing_cpu
    from kernels.problem import load_problem
    from kernels.runtime import ProblemRuntime

    flush = torch.empty(512 << 20, dtype=torch.int8, device="cuda")
    rows = []
    with pinned(timing_cpu("cuda")):
        for name in names:
            problem = load_problem(name)
            runtime = ProblemRuntime(problem, "cuda")
            for shape in problem.benchmark_shapes("cuda"):
                runtime.use_shape(shape)
                model = runtime.reference(0)
                with torch.no_grad():
                    for _ in range(20):
                        model(*runtime.inputs(1, "normal"))
                    torch.cuda.synchronize()
                    times = {"plain": [], "held": [], "plain_issue": [], "held_issue": []}
                    for rep in range(reps):
                        for way in ("plain", "held"):
                            args = runtime.inputs(100 + rep, "normal")
                            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                            flush.zero_()
                            if way == "held":
                                torch.cuda._sleep(SPIN_CYCLES)
                            start.record()
                            began = time.perf_counter()
                            model(*args)
                            issued = time.perf_counter()
                            end.record()
                            torch.cuda.synchronize()
                            times[way].append(start.elapsed_time(end))
                            times[f"{way}_issue"].append((issued - began) * 1e3)
                medians = {key: statistics.median(values) for key, values in times.items()}
                rows.append({"problem": name, "shape": shape.name} | medians)
    print(json.dumps(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="+", help="bundled names or problem files")
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.problems, args.reps)
        return
    runs = []
    for _ in range(args.processes):
        done = subprocess.run(
            [sys.executable, __file__, "--child", "--reps", str(args.reps), *args.problems],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    (args.out / "launch_bound.json").write_text(json.dumps(runs, indent=1))
    print("| problem | shape | evaluator's ms | spread | held ms | spread | host issue ms | spread |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for i, row in enumerate(runs[0]):
        cells = [row["problem"], row["shape"]]
        for key in ("plain", "held", "plain_issue"):
            values = [run[i][key] for run in runs]
            cells += [f"{statistics.median(values):.4f}", f"{max(values) / min(values):.3f}"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
