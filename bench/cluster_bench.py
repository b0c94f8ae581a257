"""Throughput of evaluate-only batches: this host's executor against a local Ray cluster, on 1 GPU and on N.

    python bench/cluster_bench.py [--problems NAME|FILE|DIR ...] [--limit K] [--repeat K] [--gpus N]
                                  [--device cuda|cpu] [--modes local-1,ray-1,local-N,ray-N] [--out DIR]

Each problem is judged with its own reference as the candidate (`ModelNew = Model`, flagged no custom
kernel), so every evaluation is a real check and timing that must come out correct. A DIR argument takes every
`*.py` in it (a folder of KernelBench files), the first K with --limit. Every mode starts from an empty cache
directory of its own, as a first run does. Per mode it prints the batch's wall time, throughput, speed-up
over local-1, the scaling efficiency (speed-up over the same executor on one slot, per slot), the mean time
inside evaluate(), and the executor's overhead per task: wall time beyond evaluate() on one slot, and the
difference to the local path on as many slots. A warm-up (one evaluation on every slot at once: Ray's workers,
the first context on each GPU) is timed apart. Verdicts (status and flag codes) are compared job by job across
modes; any difference is listed. Writes cluster_bench.json to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluators.executors import make_executor  # noqa: E402
from evaluators.executors.local import Executor, LocalExecutor, local_devices  # noqa: E402
from kernels.problem import Problem, bundled_problems, load_problem  # noqa: E402


def load_problems(specs: list[str]) -> list[Problem]:
    """Bundled names, problem files, and folders of KernelBench files, in order."""
    problems = []
    for spec in specs or bundled_problems():
        path = Path(spec)
        if path.is_dir() and not (path / "task.yml").exists():
            problems += [load_problem(file) for file in sorted(path.glob("*.py"))]
        else:
            problems.append(load_problem(spec))
    return problems


def open_mode(mode: str, device: str) -> tuple[Executor, object]:
    """The executor of a mode ("local-2", "ray-1"), and the Ray module when this mode started Ray."""
    kind, slots = mode.split("-")
    slots = int(slots)
    if kind == "local":
        devices = local_devices(device)
        return LocalExecutor(devices * slots if devices == ["cpu"] else devices[:slots]), None
    import ray

    resources = {"num_gpus": slots} if device != "cpu" else {"num_cpus": slots, "num_gpus": 0}
    ray.init(**resources, include_dashboard=False, log_to_driver=False, logging_level="warning")
    return make_executor("ray", device), ray


def run_mode(mode: str, device: str, jobs: list[tuple[Problem, str]], cache: Path) -> dict:
    """Warm up every slot, then judge every job at once; the mode's timings and outcomes."""
    os.environ["KS_CACHE_DIR"] = str(cache)  # read by the local path's options and by Ray's workers, started below
    opened = time.perf_counter()
    executor, ray = open_mode(mode, device)
    slots = int(mode.split("-")[1])
    try:
        for future in [executor.submit(*jobs[0]) for _ in range(slots)]:
            future.result()
        startup_s = time.perf_counter() - opened
        started = time.perf_counter()
        futures = [executor.submit(problem, source) for problem, source in jobs]
        results = [future.result() for future in futures]
        wall_s = time.perf_counter() - started
        where = executor.describe()
    finally:
        executor.close()
        if ray is not None:
            ray.shutdown()
    inside = [result.stages.get("total", 0.0) for result in results]
    stages = sorted({stage for result in results for stage in result.stages})
    return {
        "mode": mode,
        "executor": where,
        "slots": int(mode.split("-")[1]),
        "tasks": len(results),
        "startup_s": startup_s,
        "wall_s": wall_s,
        "per_minute": 60 * len(results) / wall_s,
        "evaluate_s_mean": sum(inside) / len(inside),
        "statuses": {status: [r.status for r in results].count(status) for status in {r.status for r in results}},
        "gpus_used": sorted({result.gpu for result in results}),
        "nodes": sorted({result.node for result in results}),
        "speedups": [result.speedup for result in results],
        "significant": sum(1 for result in results if result.significant),
        "verdicts": [[result.status, sorted(flag.code for flag in result.flags)] for result in results],
        "stages_s_mean": {stage: sum(r.stages.get(stage, 0.0) for r in results) / len(results) for stage in stages},
        # What a flag beyond the reference's own no_custom_kernel said, and on which GPU.
        "odd_flags": [
            f"{job[0].name} on {result.gpu}: {flag.code}: {flag.text}"
            for job, result in zip(jobs, results, strict=True)
            for flag in result.flags
            if flag.code != "no_custom_kernel"
        ],
    }


def overheads(rows: list[dict]) -> None:
    """Speed-up over local-1, scaling per slot, and per-task overhead: beyond evaluate() on one slot, and vs local."""
    local = {row["slots"]: row for row in rows if row["mode"].startswith("local")}
    base = local.get(1) or rows[0]
    for row in rows:
        row["speedup_vs_local_1"] = base["wall_s"] / row["wall_s"]
        one = next((r for r in rows if r["mode"] == row["mode"].split("-")[0] + "-1"), None)
        row["scaling_per_slot"] = one["wall_s"] / row["wall_s"] / row["slots"] if one else None
        busy = row["evaluate_s_mean"] * row["tasks"] / row["slots"]
        row["overhead_per_task_s"] = (row["wall_s"] - busy) * row["slots"] / row["tasks"]
        same = local.get(row["slots"])
        row["vs_local_per_task_s"] = (row["wall_s"] - same["wall_s"]) * row["slots"] / row["tasks"] if same else None


def markdown(rows: list[dict]) -> str:
    """The results as a Markdown table."""
    lines = [
        "| mode | executor | tasks | wall s | tasks/min | speed-up vs local-1 | evaluate() s | overhead/task s "
        "| vs local/task s | scaling per slot | start-up s | statuses | significant |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        versus = f"{r['vs_local_per_task_s']:+.2f}" if r["vs_local_per_task_s"] is not None else "-"
        scaling = f"{r['scaling_per_slot']:.2f}" if r["scaling_per_slot"] is not None else "-"
        lines.append(
            f"| {r['mode']} | {r['executor']} | {r['tasks']} | {r['wall_s']:.1f} | {r['per_minute']:.1f} "
            f"| {r['speedup_vs_local_1']:.2f}x | {r['evaluate_s_mean']:.2f} | {r['overhead_per_task_s']:.2f} "
            f"| {versus} | {scaling} | {r['startup_s']:.1f} | {r['statuses']} | {r['significant']} |"
        )
    return "\n".join(lines)


def verdict_differences(rows: list[dict], jobs: list[tuple[Problem, str]]) -> list[str]:
    """Jobs whose verdict (status, flag codes) differs from the first mode's, one line each."""
    first = rows[0]
    return [
        f"{problem.name}: {first['mode']} {first['verdicts'][i]} vs {row['mode']} {row['verdicts'][i]}"
        for row in rows[1:]
        for i, (problem, _) in enumerate(jobs)
        if row["verdicts"][i] != first["verdicts"][i]
    ]


def machine(device: str) -> dict:
    """Where the numbers come from."""
    import torch

    facts = {"host": socket.gethostname(), "python": platform.python_version(), "torch": torch.__version__}
    if device != "cpu":
        facts |= {"gpu": torch.cuda.get_device_name(0), "gpu_count": torch.cuda.device_count()}
    try:
        import ray

        facts["ray"] = ray.__version__
    except ImportError:
        facts["ray"] = None
    return facts


def main() -> None:
    """Parse flags, run every mode over the same jobs, print and save the table."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--problems", nargs="*", default=[], help="bundled names, files or folders (default: bundled)")
    p.add_argument("--limit", type=int, help="only the first K problems")
    p.add_argument("--repeat", type=int, default=3, help="evaluations of each problem (default 3)")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--gpus", type=int, help="N of the N-slot modes (default: every GPU, or 2 CPU slots)")
    p.add_argument("--modes", help="comma-separated, e.g. local-1,ray-1,local-2,ray-2 (default: 1 and N of each)")
    p.add_argument("--out", type=Path, default=Path("."))
    p.add_argument("--resume", type=Path, help="a cluster_bench.json of the same jobs: its modes are kept, not rerun")
    args = p.parse_args()
    slots = args.gpus or (len(local_devices(args.device)) if args.device != "cpu" else 2)
    modes = (
        args.modes.split(",")
        if args.modes
        else list(dict.fromkeys(["local-1", "ray-1", f"local-{slots}", f"ray-{slots}"]))
    )
    problems = load_problems(args.problems)[: args.limit]
    jobs = [(problem, problem.reference_as_candidate()) for _ in range(args.repeat) for problem in problems]
    print(
        f"{len(jobs)} evaluations ({len(problems)} problems x {args.repeat}) per mode: {', '.join(modes)}", flush=True
    )
    args.out.mkdir(parents=True, exist_ok=True)
    report = {"machine": machine(args.device), "problems": [p.name for p in problems], "repeat": args.repeat}
    rows = []
    if args.resume:
        earlier = json.loads(args.resume.read_text())
        if earlier["problems"] != report["problems"] or earlier["repeat"] != args.repeat:
            sys.exit("cluster_bench: --resume names a run of other jobs")
        rows = [row for row in earlier["modes"] if row["mode"] in modes]
        modes = [mode for mode in modes if mode not in {row["mode"] for row in rows}]
    for mode in modes:
        rows.append(run_mode(mode, args.device, jobs, args.out / "cache" / mode))
        print(f"  {mode}: {rows[-1]['wall_s']:.1f} s, {rows[-1]['statuses']}, on {rows[-1]['gpus_used']}", flush=True)
        overheads(rows)
        differences = verdict_differences(rows, jobs)
        # Saved after every mode, so a batch stopped by a time limit keeps the modes it finished.
        saved = report | {"modes": rows, "verdict_differences": differences}
        (args.out / "cluster_bench.json").write_text(json.dumps(saved, indent=2) + "\n")
    overheads(rows)
    differences = verdict_differences(rows, jobs)
    print(markdown(rows))
    print(f"verdicts identical across modes: {not differences}")
    for line in differences:
        print(f"  {line}")


if __name__ == "__main__":
    main()
