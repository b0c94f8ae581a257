"""What device work a candidate queues after its block's last synchronize, and no one sees.

    python bench/probes/window_reach.py [--spins-us 0,50,100,200,400,800] [--repeat 2]

The test problem (tests/evaluators/problems/scale_shift.py) is judged with the honest Triton candidate, to which an
attack is appended (tests/evaluators/redteam/timing/shared.py): after the last repetition of each held block, past
the loop's last synchronize and before the reply, it queues a spin of SPIN microseconds on a stream of its own. The
spin is no part of the calls, so whatever of it the reference's watch sees (judge/wall.watch_counted_ms) is counted
into the candidate's times, and what it does not see is the window no one watches: the end of the timing command and
the watch's start (docs/CONTRACTS.md). For each spin it prints, block by block, the spin less what was counted, and
each block's claimed calls: the window's share of a block is what a candidate doing real work there would gain.

With --timeline DIR it also logs, on the host's monotonic clock every process shares, when the candidate's last call
of each block returned (its mark follows the loop's last synchronize) and its attack queued the spin, and when the
reference's armed watch woke on the mark and launched its watcher; then prints, from each block's last call, the
medians of the three. Workers print their steps on their output, which the parent captures: a candidate's mounts are
read-only, so it can write no file of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(Path(__file__).parent)]

from worker_hook import write_site  # noqa: E402

from evaluators import EvalOptions, evaluate  # noqa: E402
from evaluators.judge import process, wall  # noqa: E402

PROBLEM = ROOT / "tests" / "evaluators" / "problems" / "scale_shift.py"
HONEST = ROOT / "tests" / "evaluators" / "candidates" / "good_triton.py"
SHARED = ROOT / "tests" / "evaluators" / "redteam" / "timing" / "shared.py"

STEP = "ks-window-step"
ATTACK = """
import os
import time

STEP = {step!r}
SPIN_US = {spin}
_per_us: list = []
_side: list = []


def step(kind):
    os.write(2, f"{{STEP}} {{kind}} {{time.perf_counter()}}\\n".encode())


def spin() -> None:
    step("spun")
    with torch.cuda.stream(_side[0]):
        torch.cuda._sleep(int(SPIN_US * _per_us[0]))


class ModelNew(_Honest):
    def forward(self, x):
        if not _per_us:  # the first (warm-up) call: the spin's cycles a microsecond, and its stream
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.cuda._sleep(2_000_000)
            end.record()
            end.synchronize()
            _per_us.append(2_000_000 / (start.elapsed_time(end) * 1e3))
            _side.append(torch.cuda.Stream())
        y = super().forward(x)
        ends, block = ending_block()
        if ends and block is not None:
            step("last_call")
            if SPIN_US:
                after_the_loop(spin)
        return y
"""

# The reference's steps, printed by a sitecustomize (worker_hook.py) on the host's monotonic clock.
HOOK = r"""
import os, time


def log(kind):
    os.write(2, f"{step} {{kind}} {{time.perf_counter()}}\n".encode())


def patch_watch(module):
    start, wait = module.Watch.start, module.wait_for_mark

    def started(self, marks=None, control=None):
        start(self, marks, control)
        if marks is not None:
            log("launched")

    def woke(marks, control):
        marked = wait(marks, control)
        log("woke" if marked else "missed")
        return marked

    module.Watch.start, module.wait_for_mark = started, woke


patch_on_import("evaluators.worker.window_watch", patch_watch)
"""

_seen: list = []
_judge_timing = wall.judge_timing


def kept(side, reference, honest_reps, device):
    verdict = _judge_timing(side, reference, honest_reps, device)
    if side is not reference:
        _seen.append((side, reference, verdict))
    return verdict


def timeline(log: Path) -> None:
    """The workers' printed steps, kept from their captured output as the parent reads it, in `log`/steps.txt."""
    capture = process.OutputCapture.__init__
    out = open(log / "steps.txt", "a", buffering=1)  # noqa: SIM115 (open for the probe's whole run)

    class Tee:
        def __init__(self, stream):
            self.stream, self.partial = stream, b""

        def read1(self, size):
            chunk = self.stream.read1(size)
            *lines, self.partial = (self.partial + chunk).split(b"\n")
            for line in lines:
                if line.startswith(STEP.encode()):
                    out.write(line[len(STEP) :].decode().strip() + "\n")
            return chunk

    def tee(self, stream, cap_bytes):
        capture(self, Tee(stream), cap_bytes)

    process.OutputCapture.__init__ = tee
    write_site(log, HOOK.format(step=STEP))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(log), os.environ.get("PYTHONPATH")]))


def steps(log: Path) -> None:
    """The armed watch's timeline, block by block (ms from the block's last call returning).

    For each block: when the reference woke on its mark, when it launched its watcher, and when the attack queued its
    spin (none with no spin); and how many marks the reference missed (the pin woke it).
    """
    logged: dict[str, list[float]] = {}
    for line in (log / "steps.txt").read_text().splitlines():
        kind, at = line.split()
        logged.setdefault(kind, []).append(float(at))
    woke, launched, spun = (sorted(logged.get(kind, [])) for kind in ("woke", "launched", "spun"))

    def next_after(times, t):
        return next(((u - t) * 1e3 for u in times if t <= u < t + 0.05), None)

    ends = sorted(logged.get("last_call", []))
    rows = [[next_after(woke, t), next_after(launched, t), next_after(spun, t)] for t in ends]
    print(f"blocks: {len(rows)}; marks missed: {len(logged.get('missed', []))}")
    kinds = ["woke", "launched", "spin queued"]
    for k, kind in enumerate(kinds):
        column = [row[k] for row in rows if row[k] is not None]
        if column:
            print(f"  {kind} after the last call: median {statistics.median(column):.3f} min {min(column):.3f} "
                  f"max {max(column):.3f} ms ({len(column)} blocks)")  # fmt: skip
    both = [row for row in rows if None not in row]
    if both:
        print(f"  watcher launched before the spin was queued: {sum(r[1] < r[2] for r in both)} of {len(both)}")
    (log / "steps.json").write_text(json.dumps({"kinds": kinds, "rows": rows, "missed": len(logged.get("missed", []))}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spins-us", default="0,50,100,200,400,800")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--timeline", type=Path, help="a directory to log each step of the window in")
    args = parser.parse_args()
    wall.judge_timing = kept
    if args.timeline:
        args.timeline.mkdir(parents=True, exist_ok=True)
        timeline(args.timeline.resolve())
    base = HONEST.read_text() + "\n\n" + SHARED.read_text()
    for _ in range(args.repeat):
        for spin in (float(s) for s in args.spins_us.split(",")):
            _seen.clear()
            result = evaluate(str(PROBLEM), base + ATTACK.format(spin=spin, step=STEP), "cuda", EvalOptions())
            print(f"== spin {spin:.0f} us: {result.status} speedup {result.speedup} band {result.speedup_band} "
                  f"flags {[f.code for f in result.flags]}", flush=True)  # fmt: skip
            for side, reference, verdict in _seen:
                calls = [sum(times) for times in wall.block_times(side)]
                counted = [c * b.reps for c, b in zip(verdict.counted or [], side.blocks, strict=False)]
                unseen = [spin / 1e3 - c for c in counted]
                print(f"  blocks {len(side.blocks)} reps {[b.reps for b in side.blocks]}; reference command "
                      f"{reference.fixed_s * 1e3:.3f} ping {reference.floor_s * 1e3:.3f} watch {verdict.watch_ms:.3f} "
                      f"ms")  # fmt: skip
                print(f"  claimed calls a block ms: median {statistics.median(calls):.3f} "
                      f"{[round(c, 3) for c in calls]}")  # fmt: skip
                print(f"  counted a block ms: {[round(c, 3) for c in counted]}")
                if unseen:
                    print(f"  unseen a block ms: median {statistics.median(unseen):.3f}, max {max(unseen):.3f}; "
                          f"parent {verdict.parent_ms:.4f} claimed {verdict.claimed_ms:.4f} slack "
                          f"{verdict.slack_ms:.4f}", flush=True)  # fmt: skip
    if args.timeline:
        steps(args.timeline.resolve())


if __name__ == "__main__":
    main()
