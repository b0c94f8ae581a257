"""Evaluate KernelBench problem files at their real sizes, the reference as candidate, against two yardsticks.

`python bench/kernelbench_eval.py --kernelbench PATH [NAMES...] [--device cuda] [--harness] [--out DIR]`: PATH is
a KernelBench checkout (no KernelBench file is copied into this repository); NAMES are files under
`KernelBench/levelN/` such as `level1/19_ReLU.py`. Per problem it records our verdict, the reference's median, the
memory plan, wall time per evaluation (cold: the warm reference worker is started; warm: it is reused), the peak
device memory seen by nvidia-smi during our evaluations, triton.testing.do_bench's median of the same reference
in this process, and, with --harness, KernelBench's own eval_kernel_against_ref (5 correctness trials, 100 timed
runs each side, as its scripts use it) run in a subprocess with its wall time. Prints a Markdown table; writes
kernelbench_eval.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from evaluators import EvalOptions, evaluate  # noqa: E402
from evaluators.judge.reference_pool import EnvironmentFailure, close_all  # noqa: E402
from kernels.problem import load_problem  # noqa: E402
from kernels.runtime import problem_runtime  # noqa: E402

# KernelBench's package imports its LLM clients at import time; the harness never calls them, so absent ones
# are stood in for by empty modules.
HARNESS = r"""
import importlib.util, json, sys, time, types
sys.path.insert(0, sys.argv[1])
for name, attr in (("openai", "OpenAI"), ("litellm", "completion")):
    if importlib.util.find_spec(name) is None:
        sys.modules[name] = types.ModuleType(name)
        setattr(sys.modules[name], attr, None)
import torch
from kernelbench.eval import eval_kernel_against_ref
source = open(sys.argv[2]).read()
torch.cuda.init()
start = time.perf_counter()
result = eval_kernel_against_ref(source, sys.argv[3], num_correct_trials=5, num_perf_trials=100,
                                 measure_performance=True, device=0, backend="cuda")
wall = time.perf_counter() - start
# Its runtime fields hold the mean in ms (a comment there says us; the 4096^2 matmul's 2.7 ms says ms).
print(json.dumps({"wall_s": wall, "correct": bool(result and result.correctness),
                  "runtime_ms": result.runtime if result else None,
                  "ref_runtime_ms": result.ref_runtime if result and result.ref_runtime > 0 else None}))
"""


class PeakMemory:
    """The largest device memory in use, polled from nvidia-smi (no CUDA context of our own)."""

    def __init__(self, index: int = 0):
        self.index, self.peak_mib, self._stop = index, 0, threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        query = ["nvidia-smi", f"--id={self.index}", "--query-gpu=memory.used", "--format=csv,noheader,nounits"]
        while not self._stop.is_set():
            out = subprocess.run(query, capture_output=True, text=True).stdout.strip()
            if out.isdigit():
                self.peak_mib = max(self.peak_mib, int(out))
            self._stop.wait(0.2)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def alias_candidate(source: str) -> str:
    """The reference as a candidate (KernelBench accepts a ModelNew that is the Model)."""
    return source + "\n\nclass ModelNew(Model):\n    pass\n"


def do_bench_ms(path: Path, device: str) -> float:
    """triton.testing.do_bench's median of the reference on one input set, in this process."""
    import triton.testing

    problem = load_problem(path)
    runtime = problem_runtime(problem, device)
    runtime.use_shape(problem.shapes(device)[0])
    model, args = runtime.reference(42), runtime.inputs(1042, "normal")

    def call():
        with torch.no_grad():
            model(*args)

    median = triton.testing.do_bench(call, return_mode="median")
    torch.cuda.empty_cache()
    return median


def harness(kernelbench: Path, path: Path, candidate: str) -> dict:
    """KernelBench's own eval_kernel_against_ref on the same files, in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", HARNESS, str(kernelbench / "src"), str(path), candidate],
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1][:200]}
    return json.loads(lines[-1])


def bench_one(path: Path, device: str, with_harness: bool, kernelbench: Path) -> dict:
    source = path.read_text()
    candidate = alias_candidate(source)
    row: dict = {"problem": f"{path.parent.name}/{path.name}"}
    walls, results = [], []
    with PeakMemory() as peak:
        for _ in range(2):  # cold (reference worker started), then warm (reused)
            start = time.perf_counter()
            try:
                results.append(evaluate(str(path), candidate, device, EvalOptions()))
            except EnvironmentFailure as failure:
                close_all()
                return row | {"status": "environment", "message": str(failure)[:600], "peak_mib": peak.peak_mib}
            walls.append(time.perf_counter() - start)
    close_all()
    result = results[-1]
    row |= {
        "status": result.status,
        "message": result.message[:160],
        "baseline_ms": result.baseline_ms,
        "candidate_ms": result.runtime_ms,
        "speedup": result.speedup,
        "cold_s": walls[0],
        "warm_s": walls[1],
        "peak_mib": peak.peak_mib,
        "stages": result.stages,
        "flags": [f.code for f in result.flags],
    }
    if result.status == "correct":
        row["do_bench_ms"] = do_bench_ms(path, device)
    if with_harness:
        row["harness"] = harness(kernelbench, path, candidate)
    return row


def main() -> None:
    """Run the bench over the named files and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernelbench", type=Path, required=True, help="a KernelBench checkout")
    parser.add_argument("names", nargs="+", help="files under KernelBench/, e.g. level1/19_ReLU.py")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--harness", action="store_true", help="also run KernelBench's eval_kernel_against_ref")
    parser.add_argument("--out", type=Path, default=Path("."))
    args = parser.parse_args()
    rows = []
    for name in args.names:
        path = args.kernelbench / "KernelBench" / name
        rows.append(bench_one(path, args.device, args.harness, args.kernelbench))
        print(json.dumps(rows[-1]), flush=True)
        (args.out / "kernelbench_eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    machine = {
        "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
        "torch": torch.__version__,
    }
    (args.out / "kernelbench_eval.json").write_text(json.dumps({"machine": machine, "rows": rows}, indent=1))
    print(f"\n{machine}\n")
    print(
        "| problem | verdict | ref median ms | do_bench ms | ratio | KB harness ref ms | cold s | warm s "
        "| KB harness s | peak GiB |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if r["status"] == "environment":
            print(f"| {r['problem']} | environment: {r['message'][:80]} |")
            continue
        h = r.get("harness", {})
        ratio = r["baseline_ms"] / r["do_bench_ms"] if r.get("do_bench_ms") and r["baseline_ms"] else None
        cells = [
            r["problem"], r["status"], _f(r["baseline_ms"]), _f(r.get("do_bench_ms")), _f(ratio),
            _f(h.get("ref_runtime_ms")), _f(r["cold_s"]), _f(r["warm_s"]), _f(h.get("wall_s")),
            _f(r["peak_mib"] / 1024),
        ]  # fmt: skip
        print("| " + " | ".join(cells) + " |")


def _f(value) -> str:
    return "-" if value is None else f"{value:.4g}"


if __name__ == "__main__":
    main()
