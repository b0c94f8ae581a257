"""One cold `python -m evaluators.run`, its processes on one wall clock: imports finished, commands read, replies sent.

`python bench/cold_timeline.py PROBLEM [--device cuda] [--runs 2] [--tree TREE] [--out DIR]`: PROBLEM is a bundled
name or a problem file; the candidate is its reference (an identity ModelNew); --tree runs another checkout's CLI.
Each run is a fresh CLI process with an empty cache directory and a `sitecustomize` on its PYTHONPATH (workers keep
the parent's PYTHONPATH entries), which writes, per process, when the interpreter was ready, when chosen modules
finished importing (torch, its extension builder, Triton, the worker's modules) and when each command was read and
each reply sent, and when each process that exits by itself did; the bench's own line says when the CLI's process
returned. Nothing is sampled (bench/probes/cold_profile.py's py-spy lost stretches of seconds), and the logging
costs microseconds an event. Prints each run's events from the CLI's start, the timing blocks left out unless
--all; keeps the logs in --out.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelbench_eval import alias_candidate, cli_env  # noqa: E402

from kernels.problem import load_problem  # noqa: E402

# Loaded by every Python process started with it on its path; logs to the directory named in the file written beside
# it (a worker's environment is scrubbed, its PYTHONPATH kept). Its imports are watched by this checkout's
# worker/on_import.py, copied beside it, whichever checkout's CLI runs.
SITE = r"""
import atexit, os, sys, time

from on_import import when_imported

_DIR = open(os.path.join(os.path.dirname(__file__), "timeline_dir")).read().strip()
_WATCH = ("torch", "torch.utils.cpp_extension", "triton", "evaluators.judge.evaluate", "evaluators.worker.replies",
          "evaluators.worker.reference", "evaluators.worker.candidate")


def _log(what):
    with open(os.path.join(_DIR, f"{os.getpid()}-{_START:.6f}.log"), "a") as out:
        out.write(f"{time.time():.6f} {what}\n")


def _logging_replies(module):
    replies = module.Replies
    read, send = replies.next_command, replies.reply

    def next_command(self):
        command = read(self)
        _log(f"read {command and command.get('cmd')}")
        return command

    def reply(self, event, meta):
        _log(f"sent {event}")
        return send(self, event, meta)

    replies.next_command, replies.reply = next_command, reply


_START = time.time()
_log("ready " + " ".join(sys.argv[:4])[-60:])
for _name in _WATCH:
    when_imported(_name, lambda module, name=_name: _log(f"imported {name}"))
when_imported("evaluators.worker.replies", _logging_replies)
atexit.register(_log, "exit")  # a worker killed at the end logs none
"""


def run_once(tree: Path, path: Path, candidate: Path, device: str, logs: Path) -> None:
    """One cold CLI run with the timeline's sitecustomize; its logs in `logs`."""
    site = Path(tempfile.mkdtemp(prefix="timeline-site-"))
    (site / "sitecustomize.py").write_text(SITE)
    shutil.copy(ROOT / "evaluators" / "worker" / "on_import.py", site / "on_import.py")
    (site / "timeline_dir").write_text(str(logs))
    with tempfile.TemporaryDirectory() as cache:
        env = cli_env(tree, cache)
        env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(site)])
        cli = [sys.executable, "-m", "evaluators.run", "--problem", str(path), "--candidate", str(candidate)]
        subprocess.run([*cli, "--device", device, "--json"], cwd=tree, env=env, capture_output=True, timeout=900)
    (logs / "bench.log").write_text(f"{time.time():.6f} the CLI's process returned\n")


def report(logs: Path, everything: bool) -> str:
    """Each process's events, seconds from the CLI's first, in order of the processes' start."""
    processes = []
    for log in logs.glob("*.log"):
        events = [line.split(" ", 1) for line in log.read_text().splitlines()]
        processes.append([(float(t), what) for t, what in events])
    start = min(events[0][0] for events in processes)
    lines = []
    for events in sorted(processes, key=lambda e: e[0][0]):
        lines.append(f"{events[0][0] - start:7.3f}  {events[0][1]}")
        for t, what in events[1:]:
            if everything or what not in ("read time", "sent timing"):
                lines.append(f"{t - start:7.3f}    {what}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem", help="bundled name or problem file")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--all", action="store_true", help="also print every timing block's command and reply")
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose CLI runs (default: this one)")
    parser.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp(prefix="cold-timeline-")))
    args = parser.parse_args()
    path = load_problem(args.problem).path
    args.out.mkdir(parents=True, exist_ok=True)
    candidate = args.out / "candidate.py"
    candidate.write_text(alias_candidate(path.read_text()))
    for run in range(args.runs):
        logs = args.out / f"run{run + 1}"
        logs.mkdir(exist_ok=True)
        run_once(args.tree.resolve(), path, candidate, args.device, logs)
        print(f"## run {run + 1}\n{report(logs, args.all)}\n", flush=True)


if __name__ == "__main__":
    main()
