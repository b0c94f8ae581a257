"""The device's own cost of an eager launch, process by process and stream by stream, beside a launch-heavy shape.

`python bench/launch_cost.py [--processes 8] [--streams 8] [--problem fused_residual_norm] [--shape 3] [--out FILE]`
on a GPU. Each process, started fresh: the device's time per launch of a one-element add, 200 queued behind the
stream hold (worker/stream_hold.py) so the host's speed is out of it, on the default stream, then on each of
`--streams` streams of its own in the order they were made, then the same 200 adds as one CUDA graph; then the
problem's reference at that shape timed by the evaluator's loop (`worker/timing.py`, 8 blocks of 100 repetitions) on
the default stream, and by `triton.testing.do_bench` (its defaults, median) in the same process, a harness that is
not ours. Prints one row per process, sorted by the default stream's cost per launch, so a process-wide offset of the
shape's median can be set against it, and the least-squares line of our loop's medians on that cost: its slope (in
launches: what a correction by the launch cost would assume) and how far the medians stay from it. Writes every
figure to --out as JSON lines; `--reanalyze JSONL...` prints the same from kept files, per device, without a GPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from contextlib import nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LAUNCHES = 200


def shape_runtime(problem_name: str, index: int):
    """(runtime, shape): the problem's runtime on the GPU at its benchmark shape `index`; nothing on the device yet."""
    from kernels.problem import load_problem
    from kernels.runtime import problem_runtime

    problem = load_problem(problem_name)
    runtime = problem_runtime(problem, "cuda")
    shape = [s for s in problem.shapes("cuda") if s.kind == "benchmark"][index]
    runtime.use_shape(shape)
    return runtime, shape


def block_medians(runtime, model, blocks: int, warm_calls: int) -> list[float]:
    """Each block's median (ms) of `model` timed by the evaluator's loop (worker/timing.py).

    A held stream (2 ms lead), the 512 MiB flush, four fresh input sets alive, `blocks` blocks of 100 repetitions.
    """
    import torch

    from evaluators.worker.timing import Clocks, TimingPlan, time_reps, timing_tensors, warm_up

    clocks, fresh = Clocks("cuda"), lambda seed: runtime.inputs(seed, "normal")
    medians = []
    with torch.no_grad():
        warm_up(lambda a: model(*a), fresh, clocks, warm_calls, 1)
        first = TimingPlan(0, 100, 1, hold=False, flush_mb=512, timing_sets=4, held_device="cuda", lead_ms=2.0)
        tensors = timing_tensors(fresh, first, "cuda")
        for block in range(blocks):
            plan = TimingPlan(block * 100, 100, 1000 + block, False, 512, 4, "cuda", lead_ms=2.0)
            facts, _ = time_reps(lambda a: model(*a), None, plan, clocks, 0, lambda d: nullcontext(), tensors)
            medians.append(statistics.median(facts["times_ms"]))
    return medians


def child(args) -> dict:
    """One process's figures (run with --child)."""
    import torch
    import triton.testing

    from evaluators.worker import stream_hold

    x = torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    hold = stream_hold.load()

    def adds() -> None:
        for _ in range(LAUNCHES):
            x.add_(1)

    def per_launch_us(run, reps: int = 12) -> float:
        times = []
        for _ in range(reps):
            hold.hold(5.0)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            hold.release()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) * 1e3 / LAUNCHES)
        return statistics.median(times[2:])

    per_launch_us(adds)  # the first probe of a process read faster than later ones: not kept
    default = per_launch_us(adds)
    streams = [torch.cuda.Stream() for _ in range(args.streams)]
    by_stream = []
    for stream in streams:
        with torch.cuda.stream(stream):
            by_stream.append(per_launch_us(adds))
    capture = torch.cuda.Stream()
    with torch.cuda.stream(capture):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=capture):
            adds()
    graphed = per_launch_us(graph.replay)

    runtime, shape = shape_runtime(args.problem, args.shape)
    model = runtime.reference(42)
    medians = block_medians(runtime, model, 8, 50)
    with torch.no_grad():
        inputs = runtime.inputs(7, "normal")
        do_bench_ms = triton.testing.do_bench(lambda: model(*inputs), return_mode="median")
    return {
        "device": torch.cuda.get_device_name(),
        "default_us": default,
        "streams_us": by_stream,
        "graph_us": graphed,
        "default_after_us": per_launch_us(adds),
        "problem": args.problem,
        "shape": shape.name,
        "shape_ms": statistics.median(medians),
        "block_ms": medians,
        "do_bench_ms": do_bench_ms,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--streams", type=int, default=8)
    parser.add_argument("--problem", default="fused_residual_norm")
    parser.add_argument("--shape", type=int, default=3, help="index among the problem's benchmark shapes")
    parser.add_argument("--out", type=Path, default=Path("launch_modes.jsonl"))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--reanalyze", nargs="+", type=Path, metavar="JSONL", help="print kept files' figures")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args)))
        return
    if args.reanalyze:
        rows = [json.loads(line) for path in args.reanalyze for line in path.read_text().splitlines() if line]
        for device in dict.fromkeys(row["device"] for row in rows):
            report([row for row in rows if row["device"] == device])
        return
    rows = []
    for _ in range(args.processes):
        command = [sys.executable, __file__, "--child", "--streams", str(args.streams), "--problem", args.problem]
        done = subprocess.run([*command, "--shape", str(args.shape)], capture_output=True, text=True, timeout=300)
        if done.returncode:
            sys.exit(f"a process failed: {done.stderr.strip().splitlines()[-1:]}")
        rows.append(json.loads(done.stdout.splitlines()[-1]))
    args.out.write_text("".join(json.dumps(row) + "\n" for row in rows))
    report(rows)


def report(rows: list[dict]) -> None:
    """One device's processes: a row each, the spreads across them, and the line of the medians on the launch cost."""
    named = " ".join(filter(None, [rows[0].get("problem"), rows[0]["shape"]]))  # files kept before rows named it
    print(f"{rows[0]['device']}: {named}, {len(rows)} processes")
    print("default stream us/launch | again at the end | own streams, in order | graph | shape median ms | do_bench ms")
    for row in sorted(rows, key=lambda r: r["default_us"]):
        streams = " ".join(f"{v:.2f}" for v in row["streams_us"])
        do_bench = f"{row['do_bench_ms']:.5f}" if "do_bench_ms" in row else "-"  # files kept before it was timed
        print(
            f"{row['default_us']:.3f} | {row['default_after_us']:.3f} | {streams} | {row['graph_us']:.3f} | "
            f"{row['shape_ms']:.5f} | {do_bench}"
        )
    spread = lambda key: max(r[key] for r in rows) / min(r[key] for r in rows) - 1  # noqa: E731
    do_bench = f", do_bench's {spread('do_bench_ms'):.1%}" if all("do_bench_ms" in r for r in rows) else ""
    print(
        f"across processes (max/min): default stream's launch {spread('default_us'):.1%}, graph's "
        f"{spread('graph_us'):.1%}, the shape's median {spread('shape_ms'):.1%}{do_bench}"
    )
    costs, medians = [r["default_us"] for r in rows], [r["shape_ms"] for r in rows]
    line, middle = statistics.linear_regression(costs, medians), statistics.median(medians)
    off = [(m - (line.slope * c + line.intercept)) / middle for c, m in zip(costs, medians, strict=True)]
    print(
        f"our loop's medians on the launch cost: slope {line.slope * 1e3:.1f} launches, medians "
        f"{min(off):+.1%} to {max(off):+.1%} off the line"
    )


if __name__ == "__main__":
    main()
