"""What the reference's check costs on one large output: `compare_outputs`, element by element.

`python bench/probes/check_cost.py [--elements N] [--dtype float32] [--repeats 5] [--root TREE]` on a GPU: times, with
the device synchronized around each, `compare_outputs` of an N-element output against a copy within tolerance, in
COMPARE_CHUNK chunks as the reference compares every timed repetition's handed-over outputs. level1/19's outputs are
4096 x 393216 (the default N). --root imports the evaluator from another checkout, so two commits can be timed on one
machine. Prints the median in ms as JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _timed(fn, repeats: int, sync) -> float:
    times = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=4096 * 393216)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose evaluator is timed")
    args = parser.parse_args()
    sys.path.insert(0, str(args.root.resolve()))
    import torch

    from evaluators.worker.compare import compare_outputs
    from evaluators.worker.memory import COMPARE_CHUNK

    dtype = getattr(torch, args.dtype)
    expected = torch.randn(args.elements, device="cuda").to(dtype)
    found = expected + (1e-5 * torch.randn_like(expected, dtype=torch.float32)).to(dtype)
    sync = torch.cuda.synchronize
    # The comparison's kernels load on its first call (bench/probes/first_use.py): before anything is timed.
    compare_outputs([found[:1024]], [expected[:1024]], None, None, "cuda", COMPARE_CHUNK)
    result = {
        "root": str(args.root),
        "device": torch.cuda.get_device_name(),
        "elements": args.elements,
        "dtype": args.dtype,
        "compare_ms": _timed(
            lambda: compare_outputs([found], [expected], None, None, "cuda", COMPARE_CHUNK), args.repeats, sync
        ),
    }
    assert compare_outputs([found], [expected], None, None, "cuda", COMPARE_CHUNK) is None
    print(json.dumps(result))


if __name__ == "__main__":
    main()
