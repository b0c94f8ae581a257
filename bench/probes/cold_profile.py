"""Where one cold `python -m evaluators.run` spends its seconds, process by process, on one clock.

`python bench/probes/cold_profile.py PROBLEM [--device cuda] [--runs 1] [--rate 250] [--window-ms 50] [--kernelbench
PATH] [--out DIR]` (needs py-spy: `pip install py-spy`). PROBLEM is a bundled name or a problem file; the candidate is
its reference (an identity ModelNew). Each run is a fresh CLI process with an empty cache directory, sampled with its
workers by `py-spy record --subprocesses --idle` into a Chrome trace (one clock for every process). Prints, per process
(the CLI, the reference's worker, the candidate's), its main thread as a timeline of phases from the CLI's start: an
import (labelled by the package imported first), else the innermost function of this repository on the stack. With
--kernelbench, KernelBench's harness process (bench/kernelbench_eval.py's) is sampled the same way after each run. Keeps
each trace in --out. Sampling slows what it samples: compare phases, not totals. py-spy can miss stretches of samples
(1.8-2.2 s in 4 of 6 runs on an H100 host): such a stretch reads as one long phase in every process at once;
bench/probes/timing_breakdown.py times the parent's commands without sampling.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # kernelbench_eval

from kernelbench_eval import HARNESS, alias_candidate, cli_env  # noqa: E402

from kernels.problem import load_problem  # noqa: E402

PLUMBING = ("evaluators/judge/channel.", "evaluators/judge/process.")


def sampled(spy: str, command: list[str], trace: Path, rate: int, env: dict) -> None:
    """Run `command` under py-spy, writing a Chrome trace of every process it starts."""
    record = [
        spy,
        "record",
        "--subprocesses",
        "--idle",
        "--nonblocking",
        "--rate",
        str(rate),
        "--format",
        "chrometrace",
    ]
    done = subprocess.run(
        [*record, "-o", str(trace), "--", *command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    if not trace.exists():
        raise SystemExit(f"error: py-spy wrote no trace: {(done.stderr.strip().splitlines() or ['?'])[-1]}")


def find_spy() -> str:
    """py-spy on PATH, or beside this Python (a virtual environment's bin, or pip's --target bin)."""
    found = shutil.which("py-spy") or shutil.which("py-spy", path=str(Path(sys.executable).parent))
    if not found:
        raise SystemExit("error: py-spy not found (pip install py-spy)")
    return found


def stacks_by_thread(trace: Path) -> dict:
    """{(pid, tid): [(from_s, to_s, stack)]}: each stretch one stack lasted, root first, as (function, file) pairs.

    The trace holds only changes: at each time the frames that ended, then those that began.
    """
    open_frames, since, stretches = defaultdict(list), {}, defaultdict(list)
    for event in json.loads(trace.read_text()):
        key, ts = (event["pid"], event["tid"]), event["ts"] / 1e6
        if key in since and since[key][0] < ts:
            stretches[key].append((since[key][0], ts, since[key][1]))
        if event["ph"] == "B":
            frame = (event["name"], event["args"].get("filename", ""))
            named = not frame[1] and frame[0].startswith("process ")  # py-spy's frame naming each process
            open_frames[key].append(None if named else frame)
        else:
            open_frames[key].pop()
        since[key] = (ts, tuple(frame for frame in open_frames[key] if frame))
    return stretches


def phase(stack: tuple) -> str:
    """What a stack was doing: its outermost import (a third-party package's first), else our innermost function."""
    entry = next((i + 1 for i, (name, _) in enumerate(stack) if name == "_run_code"), None)
    imports = [f for i, (n, f) in enumerate(stack) if n == "<module>" and i != entry and not f.startswith("<")]
    if imports:
        outside = [f for f in imports if not f.startswith(str(ROOT))]
        return "import " + _module(outside[0] if outside else imports[0])
    ours = [f"{_module(f)}.{n.split('.<locals>')[0]}" for n, f in stack if f.startswith(str(ROOT))]
    if ours and ours[-1] == "evaluators/worker/replies.Replies.next_command":
        return "waiting for a command"
    # The parent's pipe plumbing says less than the step that is waiting on it.
    told = [name for name in ours if not name.startswith(PLUMBING)] or ours
    return told[-1] if told else (stack[-1][0] if stack else "?")


def _module(filename: str) -> str:
    """A source file as a short name: its package in site-packages, its path in this repository, else its name."""
    if "site-packages/" in filename:
        return filename.split("site-packages/")[1].split("/")[0].removesuffix(".py")
    if filename.startswith(str(ROOT)):
        return str(Path(filename).relative_to(ROOT).with_suffix(""))
    path = Path(filename)
    return path.parent.name if path.stem == "__init__" else path.stem


def role(stretches: list) -> str:
    names = {name for _, _, stack in stretches for name, _ in stack}
    for served, label in (("serve_reference", "reference worker"), ("serve_candidate", "candidate worker")):
        if served in names:
            return label
    return "harness" if "eval_kernel_against_ref" in names else "process"


def timeline(stretches: list, window_s: float) -> list[tuple[float, float, str]]:
    """The thread's phases in order: each window of window_s is the phase it spent most time in, runs merged."""
    start = stretches[0][0]
    windows: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for begin, end, stack in stretches:
        label, at = phase(stack), begin
        index = int((begin - start) / window_s)
        while at < end:
            upto = min(end, start + (index + 1) * window_s)
            windows[index][label] += max(upto - at, 0.0)
            at, index = upto, index + 1
    runs: list[list] = []
    for index in sorted(windows):
        label = max(windows[index].items(), key=lambda item: item[1])[0]
        begin = start + index * window_s
        if runs and runs[-1][2] == label and abs(runs[-1][1] - begin) < 1e-9:
            runs[-1][1] = begin + window_s
        else:
            runs.append([begin, begin + window_s, label])
    return [tuple(run) for run in runs]


def report(trace: Path, window_s: float) -> str:
    """Each process's main thread (its first sampled thread) as a timeline from the trace's start."""
    threads = stacks_by_thread(trace)
    first = {}
    for (pid, tid), stretches in threads.items():
        if pid not in first or stretches[0][0] < threads[(pid, first[pid])][0][0]:
            first[pid] = tid
    lines = []
    for pid, tid in sorted(first.items(), key=lambda item: threads[item][0][0]):
        stretches = threads[(pid, tid)]
        start, end = stretches[0][0], stretches[-1][1]
        lines.append(f"{role(stretches)} (pid {pid}): {start:.2f}-{end:.2f} s")
        for begin, finish, label in timeline(stretches, window_s):
            lines.append(f"  {begin:6.2f} {finish - begin:5.2f}s  {label}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem", help="bundled name or problem file")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--rate", type=int, default=250, help="samples a second")
    parser.add_argument("--window-ms", type=float, default=50, help="each window shows the phase it spent most in")
    parser.add_argument("--kernelbench", type=Path, help="a KernelBench checkout: sample its harness too")
    parser.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp(prefix="cold-profile-")))
    args = parser.parse_args()
    spy, path = find_spy(), load_problem(args.problem).path
    args.out.mkdir(parents=True, exist_ok=True)
    candidate = args.out / "candidate.py"
    candidate.write_text(alias_candidate(path.read_text()))
    for run in range(args.runs):
        with tempfile.TemporaryDirectory() as cache:
            env = cli_env(ROOT, cache)
            cli = [sys.executable, "-m", "evaluators.run", "--problem", str(path), "--candidate", str(candidate)]
            trace = args.out / f"ours_{run}.json"
            sampled(spy, [*cli, "--device", args.device, "--json"], trace, args.rate, env)
            print(f"## ours, run {run + 1}\n{report(trace, args.window_ms / 1e3)}\n", flush=True)
        if args.kernelbench:
            trace = args.out / f"kernelbench_{run}.json"
            harness = [sys.executable, "-c", HARNESS, str(args.kernelbench / "src"), str(path), str(candidate)]
            sampled(spy, harness, trace, args.rate, dict(os.environ))
            print(f"## KernelBench's harness, run {run + 1}\n{report(trace, args.window_ms / 1e3)}\n", flush=True)


if __name__ == "__main__":
    main()
