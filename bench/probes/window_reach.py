"""What device work a candidate queues after its block's last synchronize, and no one sees.

    python bench/probes/window_reach.py [--spins-us 0,50,100,200,400,800] [--repeat 2]

The test problem (tests/evaluators/problems/scale_shift.py) is judged with the honest Triton candidate, to which an
attack is appended (tests/evaluators/redteam/timing/shared.py): after the last repetition of each held block, past
the loop's last synchronize and before the reply, it queues a spin of SPIN microseconds on a stream of its own. The
spin is no part of the calls, so whatever of it the reference's watch sees (judge/wall.watch_counted_ms) is counted
into the candidate's times, and what it does not see is the window no one watches: the end of the timing command and
the watch's start (docs/CONTRACTS.md). For each spin it prints, block by block, the spin less what was counted, and
each block's claimed calls: the window's share of a block is what a candidate doing real work there would gain.

With --timeline DIR it also writes, on the host's monotonic clock every process shares, when the reference's armed
watch woke on each block's mark and launched its watcher, and when the parent read the candidate's timing reply; then
prints their medians.
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

ATTACK = """
SPIN_US = {spin}
_per_us: list = []
_side: list = []


def spin() -> None:
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
        if SPIN_US and ends and block is not None:
            after_the_loop(spin)
        return y
"""

# The reference's steps, logged by a sitecustomize (worker_hook.py) on the host's monotonic clock.
HOOK = r"""
import os, time
LOG = {log!r}


def log(kind):
    with open(os.path.join(LOG, f"{{kind}}.txt"), "a") as out:
        out.write(f"{{os.getpid()}} {{time.perf_counter()}}\n")


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
    """The parent's steps logged as they happen: each candidate's timing reply read."""
    reply = process.Worker._reply

    def read(self, command_id, event, stage, sent, since):
        got = reply(self, command_id, event, stage, sent, since)
        if got.event == "timing" and self.role == "candidate":
            with open(log / "read.txt", "a") as out:
                out.write(f"{os.getpid()} {got.received}\n")
        return got

    process.Worker._reply = read
    write_site(log, HOOK.format(log=str(log)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(log), os.environ.get("PYTHONPATH")]))


def steps(log: Path) -> None:
    """The armed watch's timeline, block by block (ms).

    For each block whose mark woke the reference's watch: how long before the parent read the candidate's reply it
    woke, and how long after waking it launched its watcher; and how many marks it missed (the pin woke it).
    """

    def times(kind):
        path = log / f"{kind}.txt"
        return sorted(float(line.split()[-1]) for line in path.read_text().splitlines()) if path.exists() else []

    woke, launched, missed = times("woke"), times("launched"), times("missed")
    rows = []
    for read in times("read"):
        before = [t for t in woke if read - 0.05 < t <= read]
        after = next((t for t in launched if before and t >= before[-1]), None)
        if before and after is not None:
            rows.append([(read - before[-1]) * 1e3, (after - before[-1]) * 1e3])
    print(f"blocks whose mark woke the watch: {len(rows)}; marks missed: {len(missed)}")
    for k, kind in enumerate(["woke before the parent read the reply", "launched after waking"]):
        column = [row[k] for row in rows]
        if column:
            print(f"  {kind}: median {statistics.median(column):.3f} min {min(column):.3f} max {max(column):.3f} ms")
    (log / "steps.json").write_text(json.dumps({"kinds": ["woke_before_read", "launched_after_woke"], "rows": rows,
                                                "missed": len(missed)}))  # fmt: skip


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
            result = evaluate(str(PROBLEM), base + ATTACK.format(spin=spin), "cuda", EvalOptions())
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
