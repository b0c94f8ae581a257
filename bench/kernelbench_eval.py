"""One cold `python -m evaluators.run` per KernelBench problem, against KernelBench's own harness, side by side.

`python bench/kernelbench_eval.py --kernelbench PATH NAMES... [--runs 3] [--harness] [--old TREE] [--out DIR]
[--warm-with NAME]`:
PATH is a KernelBench checkout (no KernelBench file is copied into this repository); NAMES are files under
`KernelBench/`, such as `level1/19_ReLU.py`. Each problem's reference is its own candidate. First, once, both
harnesses run untimed on the first problem (or --warm-with's), so neither pays for reading torch from a cold disk
or for compiling its imports (bytecode is written as on an ordinary install, even where the machine forbids it).
Then per problem:
- `--runs` cold runs of our CLI, each a fresh process with an empty cache directory (nothing kept on disk), and,
  with --harness, as many runs of KernelBench's `eval_kernel_against_ref` (5 correctness trials, 100 timed runs a
  side, as its scripts use it) in fresh processes, the two alternating which goes first;
- one cached run of our CLI, with what the last cold run left on disk;
- with --old, the CLI of another checkout (an earlier commit) once, cold;
- `triton.testing.do_bench`'s median of the reference, in a fresh process.
Ours: the process's wall time, its stages, and per benchmark shape the candidate's median over the reference's (the
reference timed against itself). KernelBench: the process's wall time and the call's alone, and its reference's
mean (what it reports) and median (of the same 100 times). Prints a Markdown table
(medians over the runs, and in how many pairs ours was faster); writes kernelbench_eval.json.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# argv: its src dir, the problem file, the candidate file, this script's folder (for stub_llm_clients).
HARNESS = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
sys.path.append(sys.argv[4])
from kernelbench_eval import stub_llm_clients
stub_llm_clients()
import statistics, torch
from kernelbench import timing
from kernelbench.eval import eval_kernel_against_ref
# Its stats are a mean, std, min and max; each list's median is kept too, to compare like with like.
medians, stats = [], timing.get_timing_stats
def get_timing_stats(elapsed_times, *args, **kwargs):
    medians.append(statistics.median(elapsed_times))
    return stats(elapsed_times, *args, **kwargs)
timing.get_timing_stats = get_timing_stats
reference, candidate = open(sys.argv[2]).read(), open(sys.argv[3]).read()
start = time.perf_counter()
result = eval_kernel_against_ref(reference, candidate, num_correct_trials=5, num_perf_trials=100,
                                 measure_performance=True, device=0, backend="cuda")
wall = time.perf_counter() - start
# Its runtime fields hold the mean in ms (a comment there says us; the 4096^2 matmul's 2.7 ms says ms).
print(json.dumps({"call_s": wall, "correct": bool(result and result.correctness),
                  "runtime_ms": result.runtime if result else None,
                  "ref_runtime_ms": result.ref_runtime if result and result.ref_runtime > 0 else None,
                  "ref_median_ms": medians[1] if len(medians) == 2 else None}))
"""

DO_BENCH = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import torch, triton.testing
from kernels.problem import load_problem
from kernels.runtime import problem_runtime
problem = load_problem(sys.argv[2])
runtime = problem_runtime(problem, "cuda")
runtime.use_shape(problem.shapes("cuda")[0])
model, args = runtime.reference(42), runtime.inputs(1042, "normal")
def call():
    with torch.no_grad():
        model(*args)
print(json.dumps({"do_bench_ms": triton.testing.do_bench(call, return_mode="median")}))
"""


def stub_llm_clients() -> None:
    """Stand-ins for KernelBench's import-time imports: its LLM clients, dotenv and tqdm (it calls load_dotenv).

    Its harness needs none of them, so each absent one becomes a module whose one name does nothing.
    """
    for name, attr in (("openai", "OpenAI"), ("litellm", "completion"), ("dotenv", "load_dotenv"), ("tqdm", "tqdm")):
        if importlib.util.find_spec(name) is None:
            sys.modules[name] = types.ModuleType(name)
            setattr(sys.modules[name], attr, lambda *args, **kwargs: None)


def alias_candidate(source: str) -> str:
    """The reference as a candidate (KernelBench accepts a ModelNew that is the Model)."""
    return source + "\n\nclass ModelNew(Model):\n    pass\n"


def last_json(text: str) -> dict | None:
    lines = [line for line in text.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else None


def cli_env(tree: Path, cache_dir) -> dict:
    """The environment of a CLI run from `tree` with its own cache directory.

    The tree first on PYTHONPATH; what the caller's held (packages carried to a machine) stays after it.
    """
    paths = [str(tree), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return os.environ | {"KS_CACHE_DIR": str(cache_dir), "PYTHONPATH": os.pathsep.join(paths)}


def our_cli(tree: Path, problem: Path, candidate: Path, cache_dir: Path) -> dict:
    """One fresh `python -m evaluators.run` process: its wall time and its JSON result."""
    env = cli_env(tree, cache_dir)
    command = [sys.executable, "-m", "evaluators.run", "--problem", str(problem), "--candidate", str(candidate)]
    start = time.perf_counter()
    done = subprocess.run(
        [*command, "--device", "cuda", "--json"], cwd=tree, env=env, capture_output=True, text=True, timeout=900
    )
    wall = time.perf_counter() - start
    result = last_json(done.stdout)
    if result is None:
        return {"wall_s": wall, "error": (done.stderr.strip().splitlines() or ["no output"])[-1][:300]}
    shapes = [s for s in result["shapes"] if s.get("speedup")]
    return {
        "wall_s": wall,
        "status": result["status"],
        "baseline_ms": result["baseline_ms"],
        "runtime_ms": result["runtime_ms"],
        "stages": {k: round(v, 3) for k, v in result["stages"].items()},
        "flags": [f["code"] for f in result["flags"]],
        # The reference timed against itself: candidate median over reference median, per benchmark shape.
        "self_ratios": [s["runtime_ms"] / s["baseline_ms"] for s in shapes],
    }


def harness(kernelbench: Path, problem: Path, candidate: Path) -> dict:
    """KernelBench's eval_kernel_against_ref in a fresh process: the process's wall time and the call's."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", HARNESS, str(kernelbench / "src"), str(problem), str(candidate), str(ROOT / "bench")],
        capture_output=True,
        text=True,
        timeout=900,
    )
    row = last_json(done.stdout) or {"error": (done.stderr.strip().splitlines() or ["no output"])[-1][:300]}
    return row | {"process_s": time.perf_counter() - start}


def do_bench(problem: Path) -> float | None:
    done = subprocess.run(
        [sys.executable, "-c", DO_BENCH, str(ROOT), str(problem)], capture_output=True, text=True, timeout=600
    )
    found = last_json(done.stdout)
    return found["do_bench_ms"] if found else None


def candidate_file(path: Path, scratch: Path) -> Path:
    """The problem's reference as a candidate file in `scratch`."""
    candidate = scratch / f"candidate_{path.stem}.py"
    candidate.write_text(alias_candidate(path.read_text()))
    return candidate


def bench_one(path: Path, args, scratch: Path) -> dict:
    candidate = candidate_file(path, scratch)
    row: dict = {"problem": f"{path.parent.name}/{path.name}", "runs": [], "harness": []}
    for i in range(args.runs):
        cache_dir = Path(tempfile.mkdtemp(dir=scratch))
        for side in ("ours", "theirs") if i % 2 == 0 else ("theirs", "ours"):
            if side == "ours":
                row["runs"].append(our_cli(ROOT, path, candidate, cache_dir))
            elif args.harness:
                row["harness"].append(harness(args.kernelbench, path, candidate))
    row["cached"] = our_cli(ROOT, path, candidate, cache_dir)
    if args.old:
        row["old"] = our_cli(args.old, path, candidate, Path(tempfile.mkdtemp(dir=scratch)))
    row["do_bench_ms"] = do_bench(path)
    return row


def warm_disk(path: Path, args, scratch: Path) -> None:
    """Both harnesses once, untimed: the first process on a fresh machine reads torch from a cold disk."""
    candidate = candidate_file(path, scratch)
    our_cli(ROOT, path, candidate, Path(tempfile.mkdtemp(dir=scratch)))
    if args.harness:
        harness(args.kernelbench, path, candidate)


def table(rows: list[dict]) -> str:
    head = (
        "| problem | verdict | ours cold s | KB process s | cold / KB | ours faster | ours cached s | KB call s "
        "| earlier commit cold s | self-timing, worst shape of cold and cached runs | ref median ms | do_bench ms "
        "| KB ref mean ms | KB ref median ms |"
    )
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    for r in rows:
        runs, kb, old = r["runs"], r["harness"], r.get("old", {})
        cold = _median([x["wall_s"] for x in runs])
        process = _median([h["process_s"] for h in kb if "process_s" in h])
        pairs = list(zip([x["wall_s"] for x in runs], [h.get("process_s") for h in kb], strict=False))
        faster = f"{sum(o < k for o, k in pairs if k)} of {len(pairs)}" if pairs else "-"
        # This checkout's cold and cached runs: the cached run's reference is timed afresh too.
        ratios = [q for x in [*runs, r["cached"]] for q in x.get("self_ratios", [])]
        worst = max(ratios, key=lambda q: abs(q - 1)) if ratios else None
        verdicts = "/".join(sorted({x.get("status", "error") for x in [*runs, r["cached"]]}))
        cells = [
            r["problem"], verdicts, _spread([x["wall_s"] for x in runs]),
            _spread([h["process_s"] for h in kb if "process_s" in h]), _f(cold / process if process else None),
            faster, _f(r["cached"]["wall_s"]), _f(_median([h["call_s"] for h in kb if "call_s" in h])),
            _f(old.get("wall_s")), f"{(worst - 1) * 100:+.1f} %" if worst else "-", _f(runs[0].get("baseline_ms")),
            _f(r.get("do_bench_ms")), _f(_median([h["ref_runtime_ms"] for h in kb if h.get("ref_runtime_ms")])),
            _f(_median([h["ref_median_ms"] for h in kb if h.get("ref_median_ms")])),
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _spread(values: list[float]) -> str:
    """The median, and the range where there are several."""
    if len(values) < 2:
        return _f(_median(values))
    return f"{_f(statistics.median(values))} ({_f(min(values))}-{_f(max(values))})"


def main() -> None:
    """Run the bench over the named files and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernelbench", type=Path, required=True, help="a KernelBench checkout")
    parser.add_argument("names", nargs="+", help="files under KernelBench/, e.g. level1/19_ReLU.py")
    parser.add_argument("--runs", type=int, default=3, help="cold runs of each harness per problem")
    parser.add_argument("--harness", action="store_true", help="also run KernelBench's eval_kernel_against_ref")
    parser.add_argument("--old", type=Path, help="another checkout whose CLI runs once, cold, for comparison")
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--warm-with", help="the file both harnesses warm up on (default: the first of NAMES)")
    args = parser.parse_args()
    args.kernelbench, args.old = args.kernelbench.resolve(), args.old.resolve() if args.old else None
    args.out.mkdir(parents=True, exist_ok=True)
    # A machine that forbids bytecode (the device tool's image sets this) has every process compile its imports
    # from source, pydantic's and KernelBench's alike: both harnesses run as on an ordinary install instead, the
    # warm-up writing what the timed runs read.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        warm_disk(args.kernelbench / "KernelBench" / (args.warm_with or args.names[0]), args, Path(scratch))
        for name in args.names:
            rows.append(bench_one(args.kernelbench / "KernelBench" / name, args, Path(scratch)))
            print(json.dumps(rows[-1]), flush=True)
            (args.out / "kernelbench_eval.json").write_text(json.dumps(rows, indent=1))
    gpu = subprocess.run(
        ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True, text=True
    )
    print(f"\n{gpu.stdout.strip()}\n\n{table(rows)}")


def _f(value) -> str:
    return "-" if value is None else f"{value:.4g}"


if __name__ == "__main__":
    main()
