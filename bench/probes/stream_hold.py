"""The stream's hold before each repetition: spun for the whole lead, or released by the host once it has issued.

`python bench/probes/stream_hold.py PROBLEM... [--rounds 5] [--reps 100] [--sync-inside] [--out FILE]` on a GPU: PROBLEM
is a bundled name or a problem file (a KernelBench file is judged at its own sizes). For each benchmark shape the
reference is built once and timed by the evaluator's own loop (worker/timing.py), in rounds that alternate the two
holds: `spin` holds the stream for the full lead, as the loop did before worker/stream_hold.py; `released` ends the hold
once the repetition's end event is queued, with the lead as its cap. The lead is the parent's, sized from a rehearsal
(judge/timing_plan.py). Prints, per hold, the median of the rounds' medians (the time the events read, which must agree)
and the host's milliseconds per repetition (what a repetition costs the evaluation). `--sync-inside` also times a call
that reads a value back inside itself, which must wait out the cap, not hang.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from contextlib import nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from evaluators.judge.timing_plan import lead_ms  # noqa: E402
from evaluators.worker.timing import Clocks, TimingPlan, time_reps, warm_up  # noqa: E402
from kernels.problem import load_problem  # noqa: E402
from kernels.runtime import problem_runtime  # noqa: E402


def timed(call, draw, clocks: Clocks, reps: int, lead: float, nonce: int, hold=False) -> tuple[dict, float]:
    """(the loop's facts, host ms per repetition) for `reps` repetitions held for `lead` ms at most.

    `hold`: every repetition's outputs copied, as the evaluator's timing blocks copy them (False: none).
    """
    plan = TimingPlan(0, reps, nonce, hold=hold, flush_mb=512, timing_sets=2, held_device="cuda", lead_ms=lead)
    began = time.perf_counter()
    facts, _ = time_reps(call, draw, plan, clocks, 0, lambda on_device: nullcontext())
    return facts, (time.perf_counter() - began) * 1e3 / reps


def compare(call, draw, reps: int, rounds: int) -> dict:
    """Both holds on one call, in alternating rounds: medians (ms) and host ms per repetition, per hold."""
    released, spun = Clocks("cuda"), Clocks("cuda")
    spun.hold_kind = "spin"  # never loads the released hold: the whole lead is spun, as before
    rehearsal, _ = timed(call, draw, released, 5, 1e-3, 1)
    lead = lead_ms(rehearsal)
    found = {"lead_ms": lead, "hold_loaded": released.hold_kind}
    for name in ("released", "spin"):
        found[name] = {"medians": [], "host_ms_per_rep": []}
    for r in range(rounds):
        for name, clocks in (("released", released), ("spin", spun))[:: 1 if r % 2 == 0 else -1]:
            facts, per_rep = timed(call, draw, clocks, reps, lead, 100 + r)
            found[name]["medians"].append(statistics.median(facts["times_ms"]))
            found[name]["host_ms_per_rep"].append(per_rep)
    return found


def reading_back(model):
    def call(args):
        out = model(*args)
        out.flatten()[0].item()  # the host waits for the device inside the call
        return out

    return call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="+")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--sync-inside", action="store_true", help="also time a call that reads a value back")
    parser.add_argument("--out", type=Path, default=Path("stream_hold.json"))
    args = parser.parse_args()
    results = []
    for name in args.problems:
        problem = load_problem(name)
        runtime = problem_runtime(problem, "cuda")
        for shape in [s for s in problem.shapes("cuda") if s.kind == "benchmark"]:
            runtime.use_shape(shape)
            model = runtime.reference(42)
            draw = runtime.inputs  # bound now: the runtime is this problem's
            calls = {"call": lambda a, m=model: m(*a)}
            if args.sync_inside:
                calls["reads back"] = reading_back(model)
            for kind, call in calls.items():
                with torch.no_grad():
                    warm_up(call, lambda seed, d=draw: d(seed, "normal"), Clocks("cuda"), 10, 7)
                    found = compare(call, lambda seed, d=draw: d(seed, "normal"), args.reps, args.rounds)
                row = {"problem": name, "shape": shape.name, "call": kind} | found
                results.append(row)
                released, spin = (statistics.median(found[h]["medians"]) for h in ("released", "spin"))
                cost_r, cost_s = (statistics.median(found[h]["host_ms_per_rep"]) for h in ("released", "spin"))
                print(
                    f"{name} {shape.name} ({kind}; hold {found['hold_loaded']}, lead {found['lead_ms']:.3f} ms): "
                    f"median released {released:.4f} spin {spin:.4f} ms ({released / spin:.4f}); "
                    f"host per repetition released {cost_r:.3f} spin {cost_s:.3f} ms ({cost_r / cost_s:.2f})",
                    flush=True,
                )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
