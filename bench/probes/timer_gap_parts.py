"""Why an honest candidate's timer sits below the parent's clock: each side's timing commands, split into parts.

`python bench/probes/timer_gap_parts.py PROBLEM [PROBLEM ...] [--runs 2] [--device cuda] [--device-parts]
[--no-profile]`: each PROBLEM is a problem file (a KernelBench one by path) judged with its own reference as the
candidate. For every timing block, on the parent's clock: the command's span per repetition; from the worker's reply:
its own times, host issue and preparation per repetition, and the stream's hold (released, or spun in full) with its
lead; from wrappers put into the workers (a sitecustomize this probe writes): the worker's time inside the command,
its repetitions' loop, the host's time in the loop's copies of the outputs to be held (their allocations), and the
hand-over of the held copies. Prints per side the medians per repetition, and what is left of the span once the
command is taken away (the pipe, waking up); the difference between the sides is the gap bench/timer_gaps.py reads.

With --device-parts the loop is replaced by a copy with events between its steps on the device (the draw, the flush,
the copies, the digests) and host clocks around the rest: from the release to the synchronize's return, from the
call's return to the release, before the loop, its integrity check, reading the events' times, and from there to the
command's facts, the digests' read among them (their ends joined on the device, copied to the host, then read as the
harness reads them), with the caching allocator's retries, device allocations and frees in the join, a first
one-element op before it, and the process's Python threads (per block, like the figures before). The events cost
each side alike. Per-block figures are shown per repetition too. --no-profile
runs the candidate's one profiled call (worker/kernel_share.py) without the profiler, to see what it leaves behind.
"""

import argparse
import os
import statistics
import sys
import tempfile
import textwrap
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from worker_hook import write_site  # noqa: E402 (bench/probes/, this script's own directory)

# Loaded by every Python process with this PYTHONPATH; it wraps the worker's timing command once its module loads.
SITE = textwrap.dedent("""
    import sys, time

    DEVICE_PARTS = False  # set where the probe writes this file: the workers' environment is an allow-list
    NO_PROFILE = False

    def _wrap(session):
        from evaluators.worker import timing
        parts = {}
        time_reps, hand_over, time_cmd = timing.time_reps, session.Session.hand_over, session.Session.time
        flatten = timing.flatten_outputs

        def timed_copies(*args, **kwargs):
            start = time.perf_counter()
            try:
                return flatten(*args, **kwargs)
            finally:
                parts["copies_ms"] = parts.get("copies_ms", 0.0) + (time.perf_counter() - start) * 1e3

        def timed_reps(*args, **kwargs):
            start = parts["reps_began"] = time.perf_counter()
            try:
                return time_reps(*args, **kwargs)
            finally:
                parts["loop_ms"] = (time.perf_counter() - start) * 1e3

        def timed_hand_over(self, *args, **kwargs):
            start = time.perf_counter()
            try:
                return hand_over(self, *args, **kwargs)
            finally:
                parts["handover_ms"] = parts.get("handover_ms", 0.0) + (time.perf_counter() - start) * 1e3

        def timed_time(self, model, command):
            parts.clear()
            start = time.perf_counter()
            facts, held = time_cmd(self, model, command)
            facts["parts"] = dict(parts, command_ms=(time.perf_counter() - start) * 1e3)
            return facts, held

        timing.time_reps, session.Session.hand_over, session.Session.time = timed_reps, timed_hand_over, timed_time
        timing.flatten_outputs = timed_copies
        if DEVICE_PARTS:
            timing._loop = _parted_loop(timing, parts)
        if NO_PROFILE:
            from evaluators.worker import kernel_share

            def unprofiled(call, device, sync):
                output = call()
                sync()
                return output, {"error": "not profiled (bench/probes/timer_gap_parts.py --no-profile)"}

            kernel_share.profiled = unprofiled

    def _parted_loop(timing, parts):
        # timing._loop with events between the harness's own steps on the device (the draw, the flush, the call,
        # the copies, the digests), and the host's wait from the release to the synchronize's return.
        import threading

        import torch

        def loop(call, pool, plan, clocks, shape, keep, flush, starts, ends, numbers):
            if flush is None:
                return original(call, pool, plan, clocks, shape, keep, flush, starts, ends, numbers)
            lead = plan.lead_ms > 0
            digester = timing.output_digest.load() if plan.hold and plan.held_device != "cpu" else None
            entered = clocks.now()
            parts["before_loop_ms"] = (entered - parts.get("reps_began", entered)) * 1e3
            times, issued, prepared, held, digests, marks, tails, ending = [], [], [], {}, [], [], [], []
            for i, rep in enumerate(numbers):
                mark = [clocks.Event(enable_timing=True) for _ in range(4)]
                began = clocks.now()
                if lead:
                    clocks.hold_stream(plan.lead_ms)
                clocks.record(mark[0])
                args = pool.draw(timing.rep_seed(plan.nonce, shape, i))
                clocks.record(mark[1])
                flush.zero_()
                clocks.record(starts[i])
                calling = clocks.now()
                output = call(args)
                issued.append((clocks.now() - calling) * 1e3)
                prepared.append((calling - began) * 1e3)
                called = clocks.now()
                clocks.record(ends[i])
                if lead:
                    clocks.release_stream()
                released = clocks.now()
                ending.append((released - called) * 1e3)
                if plan.hold:
                    with keep(plan.held_device != "cpu"):
                        held[rep] = timing.flatten_outputs(output, plan.held_device)
                    clocks.record(mark[2])
                    if digester:
                        digests.append([digester.of(tensor) for tensor in held[rep]])
                clocks.record(mark[3])
                del output
                clocks.sync()
                tails.append((clocks.now() - released) * 1e3)
                marks.append(mark)
            looped = clocks.now()
            timing.check()
            checked = clocks.now()
            times = [clocks.elapsed(s, e) for s, e in zip(starts, ends)]
            parts["elapsed_ms"] = (clocks.now() - checked) * 1e3
            split = {"draw_ms": [], "flush_ms": [], "copies_dev_ms": [], "digests_ms": []}
            for mark, start, end in zip(marks, starts, ends):
                split["draw_ms"].append(clocks.elapsed(mark[0], mark[1]))
                split["flush_ms"].append(clocks.elapsed(mark[1], start))
                if plan.hold:
                    split["copies_dev_ms"].append(clocks.elapsed(end, mark[2]))
                    split["digests_ms"].append(clocks.elapsed(mark[2], mark[3]))
            for key, values in split.items():
                parts[key] = sum(values)
            parts["tail_ms"], parts["ending_ms"] = sum(tails), sum(ending)
            parts["check_ms"] = (checked - looped) * 1e3
            facts = {"times_ms": times, "issue_ms": issued, "prepare_ms": prepared, "stream_hold": clocks.hold_kind}
            if digester:
                flat = [ends for outputs in digests for _, ends in outputs]
                stats = torch.cuda.memory_stats()
                began_first = clocks.now()
                torch.zeros(1, device="cuda")
                parts["first_op_ms"] = (clocks.now() - began_first) * 1e3
                parts["threads"] = len(threading.enumerate())
                began_read = clocks.now()
                joined = torch.cat(flat)
                joined_at = clocks.now()
                after = torch.cuda.memory_stats()
                for key in ("num_alloc_retries", "num_device_alloc", "num_device_free"):
                    parts[key] = parts.get(key, 0) + after.get(key, 0) - stats.get(key, 0)
                joined.cpu()
                parts["cat_ms"], parts["to_host_ms"] = (joined_at - began_read) * 1e3, (clocks.now() - joined_at) * 1e3
                facts["digests"] = timing.output_digest.read(digests)
                parts["read_ms"] = (clocks.now() - began_read) * 1e3 - parts["cat_ms"] - parts["to_host_ms"]
            parts["after_check_ms"] = (clocks.now() - checked) * 1e3
            return facts | {"label": "cuda-events"}, held

        original = timing._loop
        return loop

    patch_on_import("evaluators.worker.session", _wrap)
""")

BLOCKS: dict[str, list[dict]] = defaultdict(list)


def _recorded(block):
    def recorded(self, first, reps, nonce):
        block(self, first, reps, nonce)
        meta, span = self.last_reply, self.timing.blocks[-1].seconds
        role = "reference" if self.keep or self.call.__name__ == "reference_timed" else "candidate"
        sums = {key: sum(meta.get(key) or [0.0]) for key in ("times_ms", "issue_ms", "prepare_ms")}
        hold = {"hold": meta.get("stream_hold"), "lead_ms": self.lead_ms}
        BLOCKS[role].append({"reps": reps, "span_ms": span * 1e3, **sums, **(meta.get("parts") or {}), **hold})

    return recorded


def per_rep(blocks: list[dict], key: str) -> float:
    return statistics.median(b.get(key, 0.0) / b["reps"] for b in blocks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--device-parts", action="store_true", help="events between the loop's steps (cuda)")
    parser.add_argument("--no-profile", action="store_true", help="the candidate's profiled call run unprofiled")
    args = parser.parse_args()
    site = Path(tempfile.mkdtemp(prefix="gap-parts-"))
    site_text = SITE.replace("DEVICE_PARTS = False", f"DEVICE_PARTS = {args.device_parts}")
    write_site(site, site_text.replace("NO_PROFILE = False", f"NO_PROFILE = {args.no_profile}"))
    os.environ["PYTHONPATH"] = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    os.environ["KS_CACHE_DIR"] = tempfile.mkdtemp(prefix="gap-parts-cache-")
    from kernelbench_eval import alias_candidate

    from evaluators import EvalOptions, evaluate
    from evaluators.judge import timing_plan
    from kernels.problem import load_problem

    timing_plan.Side.block = _recorded(timing_plan.Side.block)
    keys = ("span_ms", "command_ms", "loop_ms", "copies_ms", "handover_ms", "times_ms", "issue_ms", "prepare_ms")
    if args.device_parts:
        keys += ("draw_ms", "flush_ms", "copies_dev_ms", "digests_ms", "tail_ms", "ending_ms")
        keys += ("before_loop_ms", "check_ms", "elapsed_ms", "after_check_ms", "cat_ms", "to_host_ms", "read_ms")
        keys += ("num_alloc_retries", "num_device_alloc", "num_device_free", "first_op_ms", "threads")
    names = " | ".join(k.removesuffix("_ms") for k in keys)
    print(f"| problem | run | side | blocks | {names} | span - command |")
    print("| --- | --- | --- | --- | " + " | ".join("---" for _ in keys) + " | --- |")
    for path in args.problems:
        problem = load_problem(path)
        for run in range(args.runs):
            BLOCKS.clear()
            result = evaluate(problem, alias_candidate(problem.path.read_text()), args.device, EvalOptions())
            wall = result.shapes[0].wall if result.shapes else None
            for role in ("reference", "candidate"):
                blocks = BLOCKS[role]
                if not blocks:
                    continue
                figures = [per_rep(blocks, k) for k in keys]
                held = f"{blocks[0]['hold']} hold, lead {blocks[0]['lead_ms']:.3f} ms"
                print(f"| {path.stem[:40]} | {run} | {role} | {len(blocks)}, {held} | "
                      + " | ".join(f"{f:.4f}" for f in figures) + f" | {figures[0] - figures[1]:.4f} |")  # fmt: skip
            if wall:
                gap = wall.parent_ms - wall.claimed_ms
                print(f"| {path.stem[:40]} | {run} | gap | {result.status} | parent {wall.parent_ms:.4f}, claimed "
                      f"{wall.claimed_ms:.4f}, gap {gap:+.4f} ms |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
