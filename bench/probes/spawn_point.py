"""How soon one cold `python -m evaluators.run` starts its two workers: seconds from its own exec to theirs.

`python bench/probes/spawn_point.py PROBLEM [--device cpu|cuda] [--runs 5] [--old TREE ...]` (needs strace). PROBLEM is
a bundled name or a problem file; the candidate is its reference (an identity ModelNew). Each run is a fresh CLI process
with an empty cache directory, under `strace -f -e trace=execve`; this checkout's CLI and each --old checkout's (an
earlier commit, e.g. from `git worktree add`) take turns, run by run. Prints per tree the medians of the first and the
second worker's exec after the CLI's. Everything a worker does waits for it: its `import torch` starts there.
"""

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # kernelbench_eval

from kernelbench_eval import alias_candidate, cli_env  # noqa: E402

from kernels.problem import load_problem  # noqa: E402

EXEC = re.compile(r"^\d+\s+(\d+\.\d+) execve\(\"[^\"]*\", \[(.*?)\]")


def one_run(tree: Path, problem: Path, candidate: Path, device: str) -> list[float]:
    """Seconds from the CLI's exec to each worker's, in order."""
    with tempfile.TemporaryDirectory() as scratch:
        env = cli_env(tree, scratch)
        trace = Path(scratch) / "trace"
        cli = [sys.executable, "-m", "evaluators.run", "--problem", str(problem), "--candidate", str(candidate)]
        done = subprocess.run(
            ["strace", "-f", "-ttt", "-e", "trace=execve", "-o", str(trace), *cli, "--device", device, "--json"],
            cwd=tree, env=env, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"error: {tree} exited {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
        execs = [(float(m[1]), m[2]) for m in map(EXEC.match, trace.read_text().splitlines()) if m]
    start = execs[0][0]
    return [at - start for at, argv in execs if "evaluators.worker" in argv and "unshare" not in argv][:2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem", help="bundled name or problem file")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--old", type=Path, action="append", default=[], help="an earlier checkout to compare")
    args = parser.parse_args()
    if not shutil.which("strace"):
        raise SystemExit("error: strace not found")
    path = load_problem(args.problem).path
    with tempfile.TemporaryDirectory() as scratch:
        candidate = Path(scratch) / "candidate.py"
        candidate.write_text(alias_candidate(path.read_text()))
        trees = [ROOT, *(tree.resolve() for tree in args.old)]
        seen: dict[Path, list[list[float]]] = {tree: [] for tree in trees}
        for _ in range(args.runs):
            for tree in trees:
                seen[tree].append(one_run(tree, path, candidate, args.device))
    for tree, runs in seen.items():
        firsts, seconds = [r[0] for r in runs if r], [r[1] for r in runs if len(r) > 1]
        print(f"{tree}: first worker {statistics.median(firsts):.3f} s, second {statistics.median(seconds):.3f} s "
              f"after the CLI's exec (medians of {len(runs)})")  # fmt: skip


if __name__ == "__main__":
    main()
