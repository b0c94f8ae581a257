"""A Ray worker killed in the middle of a batch: the batch finishes, nothing is lost or judged twice, same verdicts.

    python bench/cluster_fault.py --suite kernelbench:PATH/level2 [--problems 1-40] [--device auto|cpu]
                                  [--kill-after K] [--out DIR]

Writes each problem's reference as its candidate (bench/reference_candidates.py), then runs
`python -m evaluators.batch --cluster ray` over the suite twice, each on a fresh local Ray cluster and an empty
cache: once clean, once with one evaluation slot (a Ray actor process, `ray::EvaluationSlot`) SIGKILLed while it
evaluates, once K results are in. Prints and saves (cluster_fault.json) whether the faulty run finished, how often
each problem appears in its journal (results.jsonl), and every problem whose verdict (status, set aside or not,
significant or not) differs between the two runs' suite.json. Timings differ between any two runs; verdicts must
not. Exit 0 when all three hold, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def slot_processes(running_only: bool) -> list[int]:
    """PIDs of this machine's evaluation slots (Ray titles an actor's process `ray::Class[.method]`)."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError):
            continue
        if title.startswith("ray::EvaluationSlot") and (not running_only or ".evaluate" in title):
            pids.append(int(entry.name))
    return pids


def kill_one_slot(journal: Path, after: int, stop: threading.Event, killed: list) -> None:
    """Once `after` results are in the journal, SIGKILL one slot that is evaluating (as a dying machine would)."""
    while not stop.is_set():
        done = len(journal.read_text().splitlines()) if journal.exists() else 0
        busy = slot_processes(running_only=True) if done >= after else []
        if busy:
            os.kill(busy[0], signal.SIGKILL)
            killed.append({"pid": busy[0], "after_results": done, "at_s": time.monotonic()})
            return
        stop.wait(0.2)


def run_batch(args, candidates: Path, out: Path, kill: bool) -> dict:
    """One batch on a fresh local Ray; its suite.json, journal counts, wall time and the kill it suffered."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"} | {"KS_CACHE_DIR": str(out / "cache")}
    command = [sys.executable, "-m", "evaluators.batch", "--suite", args.suite, "--candidates", str(candidates),
               "--device", args.device, "--cluster", "ray", "--out", str(out / "results")]  # fmt: skip
    if args.problems:
        command += ["--problems", args.problems]
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=kill_one_slot, args=(out / "results" / "results.jsonl", args.kill_after, stop,
                                                          killed), daemon=True)  # fmt: skip
    started = time.monotonic()
    if kill:
        killer.start()
    batch = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=args.budget_s)
    stop.set()
    wall = time.monotonic() - started
    for kill_record in killed:
        kill_record["at_s"] -= started
    journal = out / "results" / "results.jsonl"
    keys = [json.loads(line)["row"]["key"] for line in journal.read_text().splitlines() if line.strip()]
    suite = out / "results" / "suite.json"
    return {
        "returncode": batch.returncode,
        "stderr_tail": batch.stderr[-2000:],
        "wall_s": wall,
        "killed": killed,
        "journal_counts": Counter(keys),
        "report": json.loads(suite.read_text()) if suite.exists() else None,
    }


def verdicts(report: dict | None) -> dict[str, tuple]:
    """Each problem's verdict in a suite.json: what must not depend on a worker's death."""
    if report is None:
        return {}
    return {
        row["key"]: (row["status"], bool(row["set_aside"]), _significant(row.get("speedup_band")))
        for row in report["rows"]
    }


def _significant(band) -> bool | None:
    return None if band is None else not band[0] <= 1.0 <= band[1]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--suite", required=True, help="kernelbench:PATH (a level folder) or a folder of problems")
    p.add_argument("--problems", help="ids, ranges and name patterns, as evaluators.batch takes them")
    p.add_argument("--device", default="auto", help="as evaluators.batch takes it")
    p.add_argument("--kill-after", type=int, default=5, help="results in the journal before the kill (default 5)")
    p.add_argument("--budget-s", type=float, default=540, help="the most one batch may take (default 540)")
    p.add_argument("--out", type=Path, default=Path("runs/cluster-fault"))
    args = p.parse_args()
    candidates = args.out / "candidates"
    command = [sys.executable, str(ROOT / "bench" / "reference_candidates.py"), "--suite", args.suite,
               "--out", str(candidates)] + (["--problems", args.problems] if args.problems else [])  # fmt: skip
    written = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if written.returncode != 0:
        sys.exit(f"cluster_fault: {next(iter(written.stderr.strip().splitlines()[-1:]), 'no candidates written')}")
    clean = run_batch(args, candidates, args.out / "clean", kill=False)
    faulty = run_batch(args, candidates, args.out / "faulty", kill=True)
    a, b = verdicts(clean["report"]), verdicts(faulty["report"])
    differing = sorted(key for key in a.keys() | b.keys() if a.get(key) != b.get(key))
    twice = sorted(key for key, count in faulty["journal_counts"].items() if count > 1)
    summary = {
        "problems": len(a),
        "clean": {k: v for k, v in clean.items() if k != "report"} | {"statuses": _statuses(clean["report"])},
        "faulty": {k: v for k, v in faulty.items() if k != "report"} | {"statuses": _statuses(faulty["report"])},
        "finished": faulty["returncode"] == 0 and faulty["report"] is not None,
        "judged_twice": twice,
        "missing": sorted(a.keys() - faulty["journal_counts"].keys()),
        "verdicts_differ": differing,
    }
    (args.out / "cluster_fault.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    print(f"clean: {clean['wall_s']:.1f} s, {summary['clean']['statuses']}")
    print(f"faulty: {faulty['wall_s']:.1f} s, {summary['faulty']['statuses']}, killed {faulty['killed']}")
    print(f"finished: {summary['finished']}; judged twice: {twice or 'none'}; missing: {summary['missing'] or 'none'}")
    print(f"verdicts differing from the clean run: {differing or 'none'}")
    ok = summary["finished"] and bool(faulty["killed"]) and not twice and not summary["missing"] and not differing
    return 0 if ok else 1


def _statuses(report: dict | None) -> dict:
    return dict(Counter(row["status"] for row in report["rows"])) if report else {}


if __name__ == "__main__":
    sys.exit(main())
