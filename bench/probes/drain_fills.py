"""What the drain's waits cost and what their pairs read: a read of device memory and a memset, in a whole batch.

    python bench/probes/drain_fills.py --kernelbench PATH --levels 1 --out DIR [--budget-s 215]
    python bench/probes/drain_fills.py --analyze DIR

The reference's drain (evaluators/worker/device_idle.py) times pairs, a read and a memset of the same 256 MiB, until
one after the first is quiet. Its first version timed reads alone, until one was within 5 % of the slowest of the
three quickest it had ever timed: run with a memset timed after each such read, this probe found that reads and memsets
drift together by 20-50 % within a batch, so the wait went on for noise (1,500 waits on level 1 of KernelBench, 21 s),
and the quickest-three mark sank as the process timed more; the read/memset ratio cancelled the drift.

The first form runs bench/identity_suites.py with a `sitecustomize` on the workers' PYTHONPATH that, in each process
that imports device_idle, writes each wait (its reply, with the pairs, and the marks before it) to DIR/fills/PID.jsonl.
The rule itself is unchanged. The second form sorts the waits into those that ended at the first judged pair, those
that went on, and those that lasted the whole clearing, and prints for each their seconds and their pairs' memsets and
ratios against the marks.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

HOOK = r"""
import importlib.abc, importlib.machinery, json, os, sys, time
LOG = {log!r}
NAME = "evaluators.worker.device_idle"

def patch(module):
    out = open(os.path.join(LOG, f"{{os.getpid()}}.jsonl"), "a", buffering=1)
    wait = module.Drain.wait

    def logged(self):
        marks, started = self.marks(), time.perf_counter()
        reply = wait(self)
        out.write(json.dumps({{"t": started, "marks": marks, "reply": reply, "clear_s": self.clear_s}}) + "\n")
        return reply

    module.Drain.wait = logged

class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != NAME:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run = spec.loader.exec_module
        def exec_module(module):
            run(module)
            patch(module)
        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, Finder())
"""


def run(args: argparse.Namespace) -> None:
    log = (args.out / "fills").resolve()
    log.mkdir(parents=True, exist_ok=True)
    hook = Path(tempfile.mkdtemp(prefix="ks-drain-fills-"))
    (hook / "sitecustomize.py").write_text(HOOK.format(log=str(log)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")])))
    command = [sys.executable, str(ROOT / "bench" / "identity_suites.py"), "--kernelbench", args.kernelbench,
               "--levels", args.levels, "--device", "cuda", "--budget-s", str(args.budget_s),
               "--out", str(args.out)]  # fmt: skip
    subprocess.run(command, env=env, check=True)
    analyze(args.out)


def analyze(out: Path) -> None:
    kinds: dict[str, list[dict]] = {"first": [], "went on": [], "whole clearing": []}
    for path in sorted((out / "fills").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            reads, fills, (ratio, fill) = entry["reply"]["reads_ms"], entry["reply"]["fills_ms"], entry["marks"]
            if len(reads) < 2:
                continue  # not idle: no pairs were timed
            waited_s = entry["reply"]["waited_ms"] / 1e3
            kind = "first" if len(reads) == 2 else "whole clearing" if waited_s >= entry["clear_s"] else "went on"
            kinds[kind].append({
                "waited_s": waited_s, "untimed_fill": fills[0] / fill,
                "first_fill": fills[1] / fill, "last_fill": fills[-1] / fill,
                "first_ratio": reads[1] / fills[1] / ratio, "last_ratio": reads[-1] / fills[-1] / ratio,
            })  # fmt: skip
    keys = ("untimed_fill", "first_fill", "last_fill", "first_ratio", "last_ratio")
    print("kind            waits  seconds  " + "  ".join(f"{key:>12}" for key in keys))
    for kind, rows in kinds.items():
        if not rows:
            print(f"{kind:15} {0:5}")
            continue
        cells = []
        for key in keys:
            values = sorted(row[key] for row in rows)
            cells.append(f"{statistics.median(values):.3f}/{values[int(0.9 * (len(values) - 1))]:.3f}")
        seconds = sum(row["waited_s"] for row in rows)
        print(f"{kind:15} {len(rows):5} {seconds:8.2f}  " + "  ".join(f"{cell:>12}" for cell in cells))
    print("(each cell: median/90th percentile, against the marks before the wait; first: its first judged pair)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernelbench")
    parser.add_argument("--levels", default="1")
    parser.add_argument("--budget-s", type=float, default=215)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--analyze", type=Path)
    args = parser.parse_args()
    if args.analyze:
        analyze(args.analyze)
    elif args.kernelbench and args.out:
        run(args)
    else:
        parser.error("give --kernelbench and --out, or --analyze DIR")


if __name__ == "__main__":
    main()
