"""What one timed repetition costs the host, piece by piece, and what the whole loop costs a repetition.

`python bench/probes/rep_cost.py PROBLEM... [--n 200] [--reps 100] [--rounds 3] [--out FILE]` on a GPU: PROBLEM is a
bundled name or a problem file (a KernelBench file at its own sizes). At each benchmark shape the reference is built
once, then, in one process:
- each piece of the timing loop's repetition (worker/timing.py) is timed on the host `--n` times, with the device
  synchronized after each so no queue builds up: the stream's hold and its release, the seeding alone (ours, and
  torch.manual_seed's for comparison), the input draw (seeding and the problem's generator), the flush, an event,
  the call's issue, a held copy, the final synchronize;
- the loop itself (`time_reps`, every output held, the lead from a rehearsal) runs `--rounds` times: the host's
  milliseconds per repetition, against the median the events read.
Prints microseconds per piece (medians) and per repetition; writes them to --out as JSON.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from stream_hold import timed  # noqa: E402

from evaluators.judge.timing_plan import lead_ms  # noqa: E402
from evaluators.worker.timing import Clocks, warm_up  # noqa: E402
from evaluators.worker.trials import flatten_outputs  # noqa: E402
from kernels.problem import load_problem  # noqa: E402
from kernels.runtime import problem_runtime  # noqa: E402
from kernels.seeding import seed_everything  # noqa: E402


def host_us(piece, n: int, clocks: Clocks) -> float:
    """Median host microseconds of `piece()`, the device synchronized after each."""
    spent = []
    for _ in range(n):
        began = time.perf_counter()
        piece()
        spent.append(time.perf_counter() - began)
        clocks.sync()
    return statistics.median(spent) * 1e6


def pieces(call, draw, clocks: Clocks, n: int) -> dict:
    """Host microseconds of each piece of one repetition."""
    flush = torch.empty(512 << 20, dtype=torch.int8, device="cuda")
    event = clocks.Event(enable_timing=True)
    args = draw(1)
    output = flatten_outputs(call(args), copy=False)
    clocks.hold_stream(1e-3)  # loads the hold
    clocks.release_stream()

    def hold_release():
        clocks.hold_stream(2.0)
        clocks.release_stream()

    counter = iter(range(10**9))
    return {
        "hold+release": host_us(hold_release, n, clocks),
        "seed_everything": host_us(lambda: seed_everything(next(counter)), n, clocks),
        "torch.manual_seed": host_us(lambda: torch.random.manual_seed(next(counter)), n, clocks),
        "draw (seed + generator)": host_us(lambda: draw(next(counter)), n, clocks),
        "flush": host_us(flush.zero_, n, clocks),
        "event": host_us(lambda: clocks.record(event), n, clocks),
        "call (issue)": host_us(lambda: call(args), n, clocks),
        "held copy": host_us(lambda: flatten_outputs(output, "cuda"), n, clocks),
        "sync (idle)": host_us(clocks.sync, n, clocks),
    }


def loop(call, draw, clocks: Clocks, reps: int, rounds: int) -> dict:
    """The timing loop's host ms per repetition and the events' median, per round (every output held)."""
    rehearsal, _ = timed(call, draw, clocks, 5, 1e-3, 1, hold=True)
    lead = lead_ms(rehearsal)
    found = {"lead_ms": lead, "host_ms_per_rep": [], "median_ms": [], "prepare_ms": [], "issue_ms": []}
    for r in range(rounds):
        facts, per_rep = timed(call, draw, clocks, reps, lead, 10 + r, hold=True)
        found["host_ms_per_rep"].append(per_rep)
        found["median_ms"].append(statistics.median(facts["times_ms"]))
        found["prepare_ms"].append(statistics.median(facts["prepare_ms"]))
        found["issue_ms"].append(statistics.median(facts["issue_ms"]))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="+")
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out")
    args = parser.parse_args()
    clocks = Clocks("cuda")
    results = []
    for name in args.problems:
        problem = load_problem(name)
        runtime = problem_runtime(problem, "cuda")
        for shape in problem.shapes("cuda"):
            if shape.kind != "benchmark":
                continue
            runtime.use_shape(shape)
            draw = functools.partial(runtime.inputs, dist="normal")
            model = runtime.reference(0)
            with torch.no_grad():
                call = lambda a, model=model: model(*a)  # noqa: E731
                warm_up(call, draw, clocks, 10, 0)
                row = {"problem": problem.name, "shape": shape.name, "pieces_us": pieces(call, draw, clocks, args.n)}
                row["loop"] = loop(call, draw, clocks, args.reps, args.rounds)
            results.append(row)
            parts = ", ".join(f"{k} {v:.0f}" for k, v in row["pieces_us"].items())
            lp = row["loop"]
            print(f"{problem.name} {shape.name}: {parts} (us)")
            per_rep, call_ms, prepare, issue = (
                statistics.median(lp[k]) for k in ("host_ms_per_rep", "median_ms", "prepare_ms", "issue_ms")
            )
            print(f"  loop: {per_rep:.3f} ms a repetition for a {call_ms:.4f} ms call (prepare {prepare:.3f}, issue "
                  f"{issue:.3f}, lead {lp['lead_ms']:.3f})", flush=True)  # fmt: skip
            del model
            torch.cuda.empty_cache()
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
