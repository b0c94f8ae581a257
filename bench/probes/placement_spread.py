"""Does where a call's memory lies change its time? One shape, timed at several placements in one process.

`python bench/probes/placement_spread.py PROBLEM [--shape N] [--placements 8] [--passes 3] [--reps 200]
[--spacer-mib M] [--out FILE]` on a GPU: PROBLEM is a bundled name or a problem file, N the index of a benchmark shape.
Each placement is a memory pool of its own (torch.cuda.MemPool) that first holds a spacer of a random size (0 to M MiB,
510 unless given, in 2 MiB steps), then the placement's inputs and every block the call allocates for itself: each
placement keeps its memory, and no two share any. The passes time every placement in turn, in a rotated order, so a
drift in time reaches all of them alike. If placements differ by more than the passes of one placement do, a process's
placement biases its median (the per-process bias of the reference timed against itself, docs/BENCHMARKS_HISTORY.md).
Repetitions are timed as the evaluator times them: a held stream, a 512 MiB flush, events around the call.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from evaluators.worker.timing import Clocks  # noqa: E402
from kernels.problem import load_problem  # noqa: E402
from kernels.runtime import problem_runtime  # noqa: E402

LEAD_MS = 1.0


def median_ms(call, args, clocks: Clocks, flush, reps: int, cycles: int) -> float:
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for start, end in zip(starts, ends, strict=True):
        clocks.spin(cycles)
        flush.zero_()
        start.record()
        call(args)
        end.record()
        torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem")
    parser.add_argument("--shape", type=int, default=-1)
    parser.add_argument("--placements", type=int, default=8)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--spacer-mib", type=int, default=510)
    parser.add_argument("--out", type=Path, default=Path("placement_spread.json"))
    args = parser.parse_args()
    problem = load_problem(args.problem)
    runtime = problem_runtime(problem, "cuda")
    shape = [s for s in problem.shapes("cuda") if s.kind == "benchmark"][args.shape]
    runtime.use_shape(shape)
    model, clocks, rng = runtime.reference(42), Clocks("cuda"), random.Random(5)
    flush = torch.empty(512 << 20, dtype=torch.int8, device="cuda")
    cycles = clocks.spin_cycles(LEAD_MS)
    call = lambda a: model(*a)  # noqa: E731
    placed = []
    with torch.no_grad():
        for p in range(args.placements):
            pool = torch.cuda.MemPool()
            with torch.cuda.use_mem_pool(pool):
                spacer = torch.empty(rng.randrange(0, args.spacer_mib // 2 + 1) << 21, dtype=torch.int8, device="cuda")
                inputs = runtime.inputs(1000 + p, "normal")
                for _ in range(5):
                    call(inputs)
            torch.cuda.synchronize()
            placed.append((pool, spacer, inputs))
        medians = [[0.0] * args.passes for _ in placed]
        for n in range(args.passes):
            for p in [(n + k) % len(placed) for k in range(len(placed))]:
                pool, _spacer, inputs = placed[p]
                with torch.cuda.use_mem_pool(pool):
                    medians[p][n] = median_ms(call, inputs, clocks, flush, args.reps, cycles)
    print(f"{args.problem} {shape.name}: {args.placements} placements, {args.passes} passes of {args.reps} each")
    for p, times in enumerate(medians):
        addr = placed[p][2][0].data_ptr()
        print(f"placement {p:2d}  {'  '.join(f'{t:.4f}' for t in times)} ms  input at {addr:#x}")
    means = [statistics.mean(t) for t in medians]
    within = [max(t) / min(t) - 1 for t in medians]
    print(
        f"spread of placements (max/min of their means): {max(means) / min(means) - 1:.2%}; "
        f"one placement's passes (max/min): median {statistics.median(within):.2%}, max {max(within):.2%}"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"shape": shape.name, "medians": medians}, indent=1))


if __name__ == "__main__":
    main()
