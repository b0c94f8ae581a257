"""Benchmark the evaluator on every bundled problem's seed: times, speedup, roofline, repeatability, overhead.

`python bench/bundled_seeds.py [--device cuda] [--repeats 5] [--budget-s S] [--out DIR]` prints two Markdown
tables and writes bundled_seeds.json. Per problem: the reference's and the seed's median, the speedup, the
fraction of the roofline, the spread of the seed's median over the repeated evaluations, the wall time of one
evaluation against the time spent inside timed kernels, the build stage cold and cached, and the median's
agreement with triton.testing.do_bench measured in this process; then where one evaluation's wall time goes.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from evaluators import EvalOptions, evaluate  # noqa: E402
from evaluators.judge import reference_pool, spares  # noqa: E402
from evaluators.judge.toolchain import device_kind, resolve_device  # noqa: E402
from kernels.problem import bundled_problems, load_problem  # noqa: E402
from kernels.runtime import import_problem_module  # noqa: E402


def machine() -> dict:
    """What the numbers were measured on."""
    import triton

    info = {"python": platform.python_version(), "torch": torch.__version__, "triton": triton.__version__}
    if torch.cuda.is_available():
        info["device"] = torch.cuda.get_device_name()
        info["cuda"] = torch.version.cuda or torch.version.hip
        try:
            import subprocess

            smi = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
            info["driver"] = subprocess.run(smi, capture_output=True, text=True).stdout.strip()
        except OSError:
            info["driver"] = "unknown"
    return info


def do_bench_ms(problem, device: str) -> tuple[float, float]:
    """do_bench medians of the seed and the reference on the trial-0 style inputs, in this process."""
    import triton.testing

    module = import_problem_module(problem, problem.config_name(device))
    spec = importlib.util.spec_from_file_location(f"seed_{problem.name}", problem.seed_path)
    seed = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(seed)
    torch.manual_seed(0)
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]
    torch.manual_seed(0)
    init = module.get_init_inputs()
    models = [cls(*init).to(device) for cls in (seed.ModelNew, module.Model)]
    with torch.no_grad(), torch.cuda.device(device):  # Triton launches on the current device
        return tuple(triton.testing.do_bench(lambda m=m: m(*inputs), return_mode="median") for m in models)


def bench_problem(name: str, device: str, repeats: int, cache_dir: Path) -> dict:
    """Evaluate one problem's seed `repeats` times with a fresh build cache, then compare with do_bench."""
    problem = load_problem(name)
    source = problem.seed_path.read_text()
    options = EvalOptions(cache_dir=cache_dir)
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        result = evaluate(problem, source, device, options)
        runs.append((time.perf_counter() - started, result))
        if result.status != "correct":
            return {"problem": name, "status": result.status, "message": result.message}
    walls = [wall for wall, _ in runs]
    results = [r for _, r in runs]
    medians = [r.runtime_ms for r in results]
    row = {
        "problem": name,
        "status": "correct",
        "reference_ms": statistics.median(r.baseline_ms for r in results),
        "seed_ms": statistics.median(medians),
        "speedup": statistics.median(r.speedup for r in results),
        "roofline_fraction": results[-1].roofline.fraction if results[-1].roofline else None,
        "bound": results[-1].roofline.bound if results[-1].roofline else None,
        "median_spread": (max(medians) - min(medians)) / statistics.median(medians),
        "within_run_iqr": statistics.median(r.spread for r in results),
        "wall_s": statistics.median(walls[1:] or walls),
        # The first evaluation starts the problem's reference worker (a fresh cache dir per problem): the cold case.
        "cold_wall_s": walls[0],
        "cold_startup_s": results[0].stages.get("startup"),
        "kernel_s": statistics.median(r.runtime_ms * r.reps / 1e3 for r in results),
        "build_cold_s": results[0].stages.get("build"),
        "build_cached_s": statistics.median(r.stages.get("build", 0.0) for r in results[1:]) if repeats > 1 else None,
        "stages": results[-1].stages,
        "stage_medians": {k: statistics.median(r.stages.get(k, 0.0) for r in results[1:] or results) for k in STAGES},
        "suspicious": results[-1].suspicious,
    }
    if device_kind(device) == "cuda":
        seed_ms, reference_ms = do_bench_ms(problem, device)
        row |= {"do_bench_seed_ms": seed_ms, "do_bench_reference_ms": reference_ms}
        row["do_bench_agreement"] = row["seed_ms"] / seed_ms - 1
        row["do_bench_reference_agreement"] = row["reference_ms"] / reference_ms - 1
    return row


def table(rows: list[dict], repeats: int) -> str:
    """The Markdown table for docs/BENCHMARKS.md."""
    head = (
        f"| problem | reference ms | seed ms | speedup | roofline | median spread ({repeats} evals) | wall s / eval "
        "| in timed kernels s | build cold / cached s | vs do_bench (seed, ref) |\n|" + " --- |" * 10
    )
    lines = [head]
    for r in rows:
        if r["status"] != "correct":
            lines.append(f"| {r['problem']} | {r['status']}: {r['message']} |" + " |" * 9)
            continue
        roof = f"{r['roofline_fraction']:.1%} ({r['bound']})" if r["roofline_fraction"] else "-"
        bench = (
            f"{r['do_bench_agreement']:+.1%}, {r['do_bench_reference_agreement']:+.1%}"
            if "do_bench_agreement" in r
            else "-"
        )
        cached = f"{r['build_cached_s']:.2f}" if r["build_cached_s"] is not None else "-"
        lines.append(
            f"| {r['problem']} | {r['reference_ms']:.4g} | {r['seed_ms']:.4g} | {r['speedup']:.3g}x | {roof} "
            f"| {r['median_spread']:.1%} | {r['wall_s']:.1f} | {r['kernel_s']:.2f} "
            f"| {r['build_cold_s']:.2f} / {cached} | {bench} |"
        )
    return "\n".join(lines)


STAGES = ("startup", "build", "correctness", "compare", "wait", "lock", "timing", "compare_timed", "total")


def stage_table(rows: list[dict]) -> str:
    """Median seconds per stage of one evaluation (the candidate's stages; compare ones are the reference's)."""
    head = "| problem | " + " | ".join(STAGES) + " |\n|" + " --- |" * (len(STAGES) + 1)
    lines = [head]
    for r in rows:
        if r["status"] == "correct":
            cells = " | ".join(f"{r['stage_medians'].get(name, 0.0):.2f}" for name in STAGES)
            lines.append(f"| {r['problem']} | {cells} |")
    return "\n".join(lines)


def main() -> None:
    """Run every bundled problem that has a seed and print the table last."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--problems", nargs="*", help="default: every bundled problem with a seed")
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--budget-s", type=float, help="start no further problem once this many seconds are spent")
    args = parser.parse_args()
    device = resolve_device(args.device)
    names = args.problems or [n for n in bundled_problems() if load_problem(n).seed_path]
    rows = []
    started = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ks-bench-cache-") as cache:
        try:
            for name in names:
                if args.budget_s is not None and time.perf_counter() - started > args.budget_s:
                    rows.append({"problem": name, "status": "not run", "message": f"past the {args.budget_s:g} s"})
                    continue
                rows.append(bench_problem(name, device, args.repeats, Path(cache)))
                print(json.dumps(rows[-1]), flush=True)
                (args.out / "bundled_seeds.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        finally:  # waiting spares and reference workers use the cache directory: they go before it does
            spares.close_all()
            reference_pool.close_all()
    (args.out / "bundled_seeds.json").write_text(json.dumps({"machine": machine(), "rows": rows}, indent=2))
    print(json.dumps(machine()))
    print(table(rows, args.repeats))
    print(stage_table(rows))


if __name__ == "__main__":
    main()
