"""What does the timing loop's copy of a reused output buffer cost the host, beside outputs held as made.

    python bench/probes/copy_path.py [--blocks 12] [--reps 31] [--rows 8192] [--cols 4096]

A call that writes every answer into one buffer it keeps has each repetition's output copied inside the repetition's
time (worker/trials.hold_as_made), into the pool of held outputs. Its device time is in the call's own timer; its host
time is not, and the parent's clock sees it as the call's. This times, in one process on one GPU, the worker's own loop
(worker/timing.time_reps, the stream held as in a real evaluation) over the test problem's y = x * w + 1 three ways:
the output made fresh and held as made; written into one kept buffer and copied in the held outputs' pool; the same
copy made outside that pool. Each block's outputs are shared as a seal shares them and let go, and the pool kept, as
between a shape's timing blocks. Per way it prints medians over the blocks after the first, in ms a repetition: the
block's span, the events' time, the host's preparation, issue and holding, the repetition past its device time, and
the allocations the block asked of the driver (a block).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from contextlib import nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]

import torch  # noqa: E402

from evaluators.worker.device_handoff import HeldOutputs, let_go, share_outputs, spend_event_budget  # noqa: E402
from evaluators.worker.timing import Clocks, TimingPlan, flush_size, time_reps, timing_tensors  # noqa: E402


def calls(rows: int, cols: int):
    weight = torch.randn(cols, device="cuda")
    kept = torch.empty(rows, cols, device="cuda")

    def fresh(args):
        return args[0] * weight + 1.0

    def reused(args):
        return torch.mul(args[0], weight, out=kept).add_(1.0)

    return {"as made": (fresh, False, True), "copied in the pool": (reused, True, True),
            "copied outside it": (reused, True, False)}  # fmt: skip


def way(call, copy_all: bool, pooled: bool, args) -> dict[str, float]:
    clocks, held = Clocks("cuda"), HeldOutputs("cuda")

    def fresh_inputs(seed: int) -> list:
        generator = torch.Generator("cuda").manual_seed(seed)
        return [torch.randn(args.rows, args.cols, device="cuda", generator=generator)]

    plan = TimingPlan(0, args.reps, nonce=1, hold=True, flush_mb=flush_size(None, "cuda"), timing_sets=2,
                      held_device="cuda", lead_ms=0.5, copy_all=copy_all)  # fmt: skip
    tensors = timing_tensors(fresh_inputs, plan, "cuda")
    keep = held.allocating if pooled else (lambda on_device: nullcontext())
    found: dict[str, list[float]] = {}
    for block in range(args.blocks):
        plan.first, plan.nonce = block * args.reps, block + 1
        allocs = torch.cuda.memory_stats().get("num_device_alloc", 0)
        began = time.perf_counter()
        facts, outputs = time_reps(call, fresh_inputs, plan, clocks, 0, keep, tensors)
        span = (time.perf_counter() - began) * 1e3 / args.reps
        allocs = torch.cuda.memory_stats().get("num_device_alloc", 0) - allocs  # the driver's, inside the block
        counts: list = []
        for rep, made in outputs.items():
            share_outputs(f"rep{rep}", made, counts)
            held.hold(made)
        del outputs
        let_go(counts)
        held.release(keep_pool=True)
        if block == 0:
            continue  # its first run loads kernels, and the copying way times its first block twice
        times = facts["times_ms"]
        past = [w - t for w, t in zip(facts["whole_ms"], times, strict=True)]
        host = {key: statistics.median(facts[f"{name}_ms"]) for key, name in
                (("preparation", "prepare"), ("issue", "issue"), ("holding", "hold"))}  # fmt: skip
        figures = (
            {"span": span, "events": statistics.fmean(times)}
            | host
            | {"past device": statistics.median(past), "driver allocs": allocs}
        )
        for key, value in figures.items():
            found.setdefault(key, []).append(value)
    return {key: statistics.median(values) for key, values in found.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=12)
    parser.add_argument("--reps", type=int, default=31)
    parser.add_argument("--rows", type=int, default=8192)
    parser.add_argument("--cols", type=int, default=4096)
    args = parser.parse_args()
    spend_event_budget()
    with torch.no_grad():
        ways = calls(args.rows, args.cols)
        for round_ in range(3):  # the ways in turn, so a drift of the host's speed reaches each
            for name, (call, copy_all, pooled) in ways.items():
                figures = ", ".join(f"{k} {v:.4f}" for k, v in way(call, copy_all, pooled, args).items())
                print(f"round {round_} {name:18s}: {figures}", flush=True)


if __name__ == "__main__":
    main()
