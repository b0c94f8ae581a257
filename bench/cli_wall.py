"""One cold `python -m evaluators.run` seen from outside: when its verdict is printed and when the process is gone.

`python bench/cli_wall.py PROBLEM [--device cpu|cuda] [--runs 5] [--old TREE ...]`
PROBLEM is a bundled name or a problem file; the candidate is its reference (an identity ModelNew). Each run is a
fresh process with an empty cache directory. This checkout's CLI and each --old checkout's (an earlier commit, e.g.
from `git worktree add`) take turns, run by run. Prints per tree the medians of: the verdict line (seconds from
the start), the exit, the gap between them (the CLI closing its workers and itself), and the evaluator's own
`reference` and `total` stages.
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kernelbench_eval import alias_candidate, cli_env

ROOT = Path(__file__).resolve().parents[1]


def one_run(tree: Path, problem: Path, candidate: Path, device: str) -> dict:
    """Seconds to the JSON verdict line and to the exit of one cold CLI process, with its stages."""
    with tempfile.TemporaryDirectory() as cache:
        env = cli_env(tree, cache)
        command = [sys.executable, "-m", "evaluators.run", "--problem", str(problem), "--candidate", str(candidate)]
        start = time.perf_counter()
        proc = subprocess.Popen(
            [*command, "--device", device, "--json"], cwd=tree, env=env, stdout=subprocess.PIPE, text=True
        )
        verdict_s, record = None, None
        for line in proc.stdout:
            if line.startswith("{"):
                verdict_s, record = time.perf_counter() - start, json.loads(line)
        code = proc.wait()
        exit_s = time.perf_counter() - start
    if code != 0 or record is None or record.get("status") != "correct":
        raise SystemExit(f"error: {tree} exited {code} with {record and record.get('status')}")
    stages = record.get("stages") or {}
    return {"verdict": verdict_s, "exit": exit_s, "after": exit_s - verdict_s, "reference": stages.get("reference"),
            "total": stages.get("total")}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--old", type=Path, action="append", default=[], help="another checkout to run in turn")
    args = parser.parse_args()
    problem = Path(args.problem)
    problem = problem if problem.is_file() else ROOT / "kernels" / "problems" / f"{args.problem}.py"
    if not problem.is_file():
        raise SystemExit(f"error: no problem file {problem}")
    trees = [ROOT, *(tree.resolve() for tree in args.old)]
    runs = {tree: [] for tree in trees}
    with tempfile.TemporaryDirectory() as scratch:
        candidate = Path(scratch) / "candidate.py"
        candidate.write_text(alias_candidate(problem.read_text()))
        for run in range(args.runs):
            for tree in trees if run % 2 == 0 else trees[::-1]:
                runs[tree].append(one_run(tree, problem.resolve(), candidate, args.device))
    print(f"{problem.name} on {args.device}, {args.runs} cold runs a tree (medians, s)")
    print("| tree | verdict | exit | exit after verdict | reference stage | total stage |")
    print("| --- | --- | --- | --- | --- | --- |")
    for tree, rows in runs.items():
        keys = ("verdict", "exit", "after", "reference", "total")
        cells = [statistics.median(row[key] for row in rows) for key in keys]
        print(f"| {tree} | " + " | ".join(f"{cell:.3f}" for cell in cells) + " |")


if __name__ == "__main__":
    main()
