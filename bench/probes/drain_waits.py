"""What the drain's waits cost and what their reads of device memory read, in a whole batch.

    python bench/probes/drain_waits.py --kernelbench PATH --levels 1 --out DIR [--budget-s 215]
    python bench/probes/drain_waits.py --analyze DIR

The reference's drain (evaluators/worker/device_idle.py) times a read of 256 MiB until one is within 5 % of its
mark. Its first version, the slowest of the three quickest reads ever timed, kept a warm evaluation waiting 2.26 s
of 7.37 on an H200. This probe first timed a memset after each of its reads (its first name, drain_fills.py): reads
after it spread by 20-50 %, the memset by 2 % (`bench/data/drain_fills_l1_h200_8f1edcf.json.gz`); a second version
judged the read/memset ratio, and its reads, each right after a memset, spread as much (bench/probes/read_kinds.py:
a read just after writes pays for writing them back). The drain now times each read right after an untimed one,
against a quantile of its waits' first reads.

The first form runs bench/identity_suites.py with a `sitecustomize` on the workers' PYTHONPATH that, in each process
that imports device_idle, writes each wait (its reply, with the reads, and the mark before it) to DIR/waits/PID.jsonl.
The rule itself is unchanged. The second form sorts the waits into those that ended at their first read, those that
went on, and those that lasted until their reads were trusted, and prints for each their seconds and their first and
last reads against the mark (or, before the first trusted read, against their own last).
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

from worker_hook import write_site  # bench/probes/, this script's own directory

ROOT = Path(__file__).resolve().parents[2]

HOOK = r"""
import json, os, time
LOG = {log!r}


def patch(module):
    out = open(os.path.join(LOG, f"{{os.getpid()}}.jsonl"), "a", buffering=1)
    wait = module.Drain.wait

    def logged(self, mark, quiet_since):
        started = time.perf_counter()
        reply = wait(self, mark, quiet_since)
        out.write(json.dumps({{"t": started, "mark": mark, "reply": reply, "clear_s": self.clear_s}}) + "\n")
        return reply

    module.Drain.wait = logged


patch_on_import("evaluators.worker.device_idle", patch)
"""


def run(args: argparse.Namespace) -> None:
    log = (args.out / "waits").resolve()
    log.mkdir(parents=True, exist_ok=True)
    hook = Path(tempfile.mkdtemp(prefix="ks-drain-waits-"))
    write_site(hook, HOOK.format(log=str(log)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")])))
    command = [sys.executable, str(ROOT / "bench" / "identity_suites.py"), "--kernelbench", args.kernelbench,
               "--levels", args.levels, "--device", "cuda", "--budget-s", str(args.budget_s),
               "--out", str(args.out)]  # fmt: skip
    subprocess.run(command, env=env, check=True)
    analyze(args.out)


def analyze(out: Path) -> None:
    kinds: dict[str, list[dict]] = {"first": [], "went on": [], "trusted": []}
    for path in sorted((out / "waits").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            reads, mark = entry["reply"]["reads_ms"], entry["mark"] or entry["reply"]["reads_ms"][-1]
            if not reads:
                continue  # not idle: no reads were timed
            waited_s = entry["reply"]["waited_ms"] / 1e3
            kind = "trusted" if entry["reply"]["trusted_ms"] else "first" if len(reads) == 1 else "went on"
            kinds[kind].append({"waited_s": waited_s, "first": reads[0] / mark, "last": reads[-1] / mark})
    print("kind            waits  seconds    first read     last read")
    for kind, rows in kinds.items():
        if not rows:
            print(f"{kind:15} {0:5}")
            continue
        cells = []
        for key in ("first", "last"):
            values = sorted(row[key] for row in rows)
            cells.append(f"{statistics.median(values):.3f}/{values[int(0.9 * (len(values) - 1))]:.3f}")
        seconds = sum(row["waited_s"] for row in rows)
        print(f"{kind:15} {len(rows):5} {seconds:8.2f}  " + "  ".join(f"{cell:>12}" for cell in cells))
    print("(each cell: median/90th percentile, against the mark before the wait)")


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
