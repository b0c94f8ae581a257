"""Why an honest candidate's timer sits below the parent's clock: each side's timing commands, split into parts.

`python bench/probes/timer_gap_parts.py PROBLEM [PROBLEM ...] [--runs 2] [--device cuda]`: each PROBLEM is a problem
file (a KernelBench one by path) judged with its own reference as the candidate. For every timing block, on the
parent's clock: the command's span per repetition; from the worker's reply: its own times, host issue and preparation
per repetition, and the stream's hold (released, or spun in full) with its lead; from wrappers put into the workers (a
sitecustomize this probe writes): the worker's time inside the command, its repetitions' loop, the host's time in the
loop's copies of the outputs to be held (their allocations), and the hand-over of the held copies. Prints per side the
medians per repetition, and what is left of the span once the command is taken away (the pipe, waking up); the
difference between the sides is the gap bench/timer_gaps.py reads.
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

# Loaded by every Python process with this PYTHONPATH; it wraps the worker's timing command once its module loads.
SITE = textwrap.dedent("""
    import sys, time

    class _Patch:
        def find_spec(self, name, path=None, target=None):
            if name != "evaluators.worker.session":
                return None
            from importlib.machinery import PathFinder

            spec = PathFinder.find_spec(name, path)
            run = spec.loader.exec_module

            def exec_module(module):
                run(module)
                _wrap(module)

            spec.loader.exec_module = exec_module
            return spec

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
            start = time.perf_counter()
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

    sys.meta_path.insert(0, _Patch())
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
    args = parser.parse_args()
    site = Path(tempfile.mkdtemp(prefix="gap-parts-"))
    (site / "sitecustomize.py").write_text(SITE)
    os.environ["PYTHONPATH"] = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    os.environ["KS_CACHE_DIR"] = tempfile.mkdtemp(prefix="gap-parts-cache-")
    from kernelbench_eval import alias_candidate

    from evaluators import EvalOptions, evaluate
    from evaluators.judge import timing_plan
    from kernels.problem import load_problem

    timing_plan.Side.block = _recorded(timing_plan.Side.block)
    keys = ("span_ms", "command_ms", "loop_ms", "copies_ms", "handover_ms", "times_ms", "issue_ms", "prepare_ms")
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
