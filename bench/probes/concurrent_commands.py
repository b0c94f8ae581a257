"""Which worker commands grow when a second GPU of the host evaluates at the same time.

    python bench/probes/concurrent_commands.py --kernelbench KB [--level 2] [--problems 1-12] [--out DIR]

One `python -m evaluators.batch` of the level's references as their own candidates on cuda:0 alone, then the same
batch on cuda:0 and cuda:1 at once (two processes, one cache directory, as two slots of one host share it). Every
worker logs when it read each command and sent its reply (bench/cold_timeline.py's sitecustomize); the probe prints,
per role and command, the mean seconds from read to reply alone and beside the other GPU, and their ratio.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from cold_timeline import SITE  # noqa: E402


def batch(kb: Path, level: int, problems: str, device: str, candidates: Path, out: Path, cache: Path, logs: Path):
    """Start one batch with the timeline's sitecustomize; the Popen."""
    site = Path(tempfile.mkdtemp(prefix="timeline-site-"))
    (site / "sitecustomize.py").write_text(SITE)
    shutil.copy(ROOT / "evaluators" / "worker" / "on_import.py", site / "on_import.py")
    (site / "timeline_dir").write_text(str(logs))
    logs.mkdir(parents=True, exist_ok=True)
    paths = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)), str(site)]
    env = os.environ | {"KS_CACHE_DIR": str(cache), "PYTHONPATH": os.pathsep.join(paths)}
    suite = f"kernelbench:{kb}/level{level}"
    command = [sys.executable, "-m", "evaluators.batch", "--suite", suite, "--candidates", str(candidates),
               "--problems", problems, "--device", device, "--out", str(out)]  # fmt: skip
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def durations(logs: Path) -> dict[tuple[str, str], list[float]]:
    """(role, command) -> seconds from each read to the reply after it, over every worker's log."""
    found = defaultdict(list)
    for log in logs.glob("*.log"):
        lines = [line.split(" ", 1) for line in log.read_text().splitlines()]
        head = lines[0][1] if lines else ""
        role = "reference" if "reference" in head else "candidate" if "candidate" in head else None
        if role is None:
            continue
        command, since = None, 0.0
        for stamp, what in lines[1:]:
            if what.startswith("read "):
                command, since = what[5:], float(stamp)
            elif what.startswith("sent ") and command:
                found[role, command].append(float(stamp) - since)
                command = None
    return found


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernelbench", type=Path, required=True)
    p.add_argument("--level", type=int, default=2)
    p.add_argument("--problems", default="1-12")
    p.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp(prefix="concurrent-")))
    args = p.parse_args()
    kb = args.kernelbench / "KernelBench" if (args.kernelbench / "KernelBench").is_dir() else args.kernelbench
    candidates = args.out / "candidates"
    subprocess.run([sys.executable, str(ROOT / "bench" / "reference_candidates.py"), "--suite",
                    f"kernelbench:{kb}/level{args.level}", "--problems", args.problems, "--out", str(candidates)],
                   check=True, capture_output=True)  # fmt: skip
    walls = {}
    for mode, devices in (("alone", ["cuda:0"]), ("beside", ["cuda:0", "cuda:1"])):
        cache = args.out / mode / "cache"
        started = time.perf_counter()
        runs = [batch(kb, args.level, args.problems, device, candidates, args.out / mode / device,
                      cache, args.out / mode / "logs" / device) for device in devices]  # fmt: skip
        for run in runs:
            run.wait(timeout=900)
        walls[mode] = time.perf_counter() - started
    alone = durations(args.out / "alone" / "logs" / "cuda:0")
    beside = durations(args.out / "beside" / "logs" / "cuda:0")
    print(f"wall: alone {walls['alone']:.1f} s, two GPUs at once {walls['beside']:.1f} s ({args.out})")
    print("| role | command | n | alone s (mean) | beside s (mean) | ratio | beside - alone, all calls s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    rows = []
    for key in sorted(set(alone) | set(beside)):
        a, b = alone.get(key, []), beside.get(key, [])
        if not a or not b:
            continue
        extra = sum(b) - sum(a)
        rows.append((extra, key, a, b))
    for extra, (role, command), a, b in sorted(rows, reverse=True):
        ma, mb = statistics.fmean(a), statistics.fmean(b)
        print(f"| {role} | {command} | {len(b)} | {ma:.4f} | {mb:.4f} | {mb / ma if ma else 0:.2f} | {extra:+.3f} |")


if __name__ == "__main__":
    main()
