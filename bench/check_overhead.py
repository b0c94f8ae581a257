"""What an evaluation costs at this tree against another checkout: warm evaluations of one problem, in one process.

    python bench/check_overhead.py --problem row_softmax [--device cuda] [--old TREE] [--runs 7] [--rounds 2]
                                   [--out FILE]

In each of `--rounds` rounds, each tree in turn gets a fresh process that evaluates the problem's reference as its own
candidate `--runs` times in a row (the first warms the reference worker, the spares and the caches up and is left
out), the way the graph evaluates candidate after candidate. Prints, per tree, the median wall time of an evaluation
and of each stage, how many shape timings the evaluations made (a disputed shape is timed twice), and the ratio of
this tree's median to the other's: the cost of whatever the two trees check differently. `--old` is a checkout of
another commit (for example `git worktree add /tmp/base HEAD~3`, or `git archive` unpacked).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, tempfile, time
from evaluators import EvalOptions, evaluate
from evaluators.judge import evaluate as evaluation
from kernels.problem import load_problem
timed = evaluation._timed
calls = []
def counting(*args, **kwargs):  # a shape timed twice was disputed once: the retiming is part of the cost
    calls.append(1)
    return timed(*args, **kwargs)
evaluation._timed = counting
problem = load_problem(sys.argv[1])
source = problem.reference_as_candidate()
options = EvalOptions(cache_dir=tempfile.mkdtemp(prefix="ks-overhead-"))
rows = []
for _ in range(int(sys.argv[3])):
    started, calls[:] = time.perf_counter(), []
    result = evaluate(problem, source, sys.argv[2], options)
    rows.append({"wall_s": time.perf_counter() - started, "status": result.status, "speedup": result.speedup,
                 "stages": result.stages, "flags": [f.code for f in result.flags], "timings": len(calls)})
print(json.dumps(rows))
"""


def run_tree(tree: Path, problem: str, device: str, runs: int) -> list[dict]:
    """The evaluations of one tree, in a fresh process whose imports come from that tree."""
    path = os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path, HF_HUB_OFFLINE="1")
    done = subprocess.run([sys.executable, "-c", CHILD, problem, device, str(runs)], cwd=tree, env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{tree}: the evaluations failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def summary(warm: list[dict]) -> dict:
    """Medians over the warm evaluations."""
    stages = sorted({name for row in warm for name in row["stages"]})
    return {
        "wall_s": statistics.median(r["wall_s"] for r in warm),
        "stages": {name: statistics.median(r["stages"].get(name, 0.0) for r in warm) for name in stages},
        "statuses": sorted({r["status"] for r in warm}),
        "speedups": [r["speedup"] for r in warm],
        "flags": sorted({f for r in warm for f in r["flags"]}),
        "timings": sum(r["timings"] for r in warm),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", default="row_softmax")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--old", type=Path, help="another checkout to compare with")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=2, help="fresh processes per tree, the trees alternating")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    trees = {"this tree": ROOT} | ({"old": args.old.resolve()} if args.old else {})
    # Alternated, so a machine that warms up or slows down over the run favours neither tree.
    results = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, tree in trees.items():
            results[name] += run_tree(tree, args.problem, args.device, args.runs)[1:]  # the first warms up
    table = {name: summary(rows) for name, rows in results.items()}
    print(f"| tree | evaluation (median s) | {' | '.join(sorted(table['this tree']['stages']))} | statuses | flags "
          "| shape timings (all runs) |")  # fmt: skip
    print("| --- " * (5 + len(table["this tree"]["stages"])) + "|")
    for name, row in table.items():
        stages = " | ".join(f"{row['stages'].get(s, 0.0):.3f}" for s in sorted(table["this tree"]["stages"]))
        print(f"| {name} | {row['wall_s']:.3f} | {stages} | {', '.join(row['statuses'])} | {', '.join(row['flags'])} "
              f"| {row['timings']} |")  # fmt: skip
    if "old" in table:
        print(f"\nthis tree / old, median evaluation: {table['this tree']['wall_s'] / table['old']['wall_s']:.3f}")
    if args.out:
        args.out.write_text(json.dumps({"problem": args.problem, "device": args.device, "runs": results}, indent=1))


if __name__ == "__main__":
    main()
