"""Whether a reference's time depends on what its process allocated on the device before building the reference.

`python bench/probes/allocation_order.py PROBLEM [--shape N] [--processes 3] [--out FILE]` on a GPU: PROBLEM is a
bundled name or a problem file, N the index of a benchmark shape. Fresh processes, one variant after another in turn,
each building the reference (its parameters on the device):
- `first`: before anything else is allocated on the device;
- `after 1 element`: after a one-element tensor, as a worker's first device call makes one (worker/main.py);
- `after 64 MiB`: after a 64 MiB tensor;
then timing it as the evaluator does (worker/timing.py: a held stream, the 512 MiB flush, four fresh input sets alive,
4 blocks of 100 repetitions). Prints each variant's median over its processes and each process's; writes the
figures as JSON lines. Written when level1/40 (LayerNorm, 16 MiB weight and bias) read 1.3-1.7 % slower in the
evaluator's workers on an H100 than in do_bench and KernelBench's harness, whose processes build the model first.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for the scripts that stay there

from launch_cost import block_medians, shape_runtime  # noqa: E402

VARIANTS = {"first": None, "after 1 element": 0, "after 64 MiB": 64}


def child(problem_name: str, shape_index: int, spacer_mb: int | None) -> dict:
    """One process's median (run with --child)."""
    import torch

    runtime, shape = shape_runtime(problem_name, shape_index)
    if spacer_mb is not None:
        spacer = torch.empty(max(spacer_mb << 20, 1), dtype=torch.int8, device="cuda")  # noqa: F841  kept alive
    medians = block_medians(runtime, runtime.reference(42), 4, 20)
    return {"device": torch.cuda.get_device_name(), "shape": shape.name, "median_ms": statistics.median(medians),
            "block_ms": medians}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem")
    parser.add_argument("--shape", type=int, default=0, help="index among the problem's benchmark shapes")
    parser.add_argument("--processes", type=int, default=3, help="processes per variant")
    parser.add_argument("--out", type=Path, default=Path("allocation_order.jsonl"))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        spacer = None if args.child == "none" else int(args.child)
        print(json.dumps(child(args.problem, args.shape, spacer)))
        return
    rows = []
    for _ in range(args.processes):
        for name, spacer in VARIANTS.items():
            command = [sys.executable, __file__, args.problem, "--shape", str(args.shape), "--child"]
            done = subprocess.run([*command, "none" if spacer is None else str(spacer)], capture_output=True,
                                  text=True, timeout=600)  # fmt: skip
            if done.returncode:
                sys.exit(f"error: a process failed: {done.stderr.strip().splitlines()[-1:]}")
            rows.append({"variant": name} | json.loads(done.stdout.splitlines()[-1]))
    args.out.write_text("".join(json.dumps(row) + "\n" for row in rows))
    print(f"{rows[0]['device']}: {args.problem} {rows[0]['shape']}, {args.processes} processes a variant")
    first = statistics.median(r["median_ms"] for r in rows if r["variant"] == "first")
    for name in VARIANTS:
        values = [r["median_ms"] for r in rows if r["variant"] == name]
        median, each = statistics.median(values), " ".join(f"{v:.4f}" for v in values)
        print(f"{name:>16}: {median:.4f} ms ({median / first:.4f} of first) | {each}")


if __name__ == "__main__":
    main()
