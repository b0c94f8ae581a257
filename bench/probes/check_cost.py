"""What the reference's checks cost on one large output: a sketch, its bound, and an element-wise comparison.

`python bench/probes/check_cost.py [--elements N] [--dtype float32] [--repeats 5] [--root TREE]` on a GPU: times, with
the device synchronized around each, the sketch of an N-element output (worker/sketch.py), the bound of an honest sketch
(`sketch_tolerance`, read back as the check reads it) and `compare_outputs` against a copy within tolerance, in
COMPARE_CHUNK chunks as the reference compares. level1/19's outputs are 4096 x 393216 (the default N). --root imports
the evaluator from another checkout, so two commits can be timed on one machine. Prints medians in ms as JSON.
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
    from evaluators.worker.sketch import Sketcher, read_back, sketch_tolerance, sketch_values

    dtype = getattr(torch, args.dtype)
    expected = torch.randn(args.elements, device="cuda").to(dtype)
    found = expected + (1e-5 * torch.randn_like(expected, dtype=torch.float32)).to(dtype)
    sketcher = Sketcher(7)
    sync = torch.cuda.synchronize
    for _ in range(2):  # kernels loaded and weights drawn before anything is timed
        sketch_values([sketcher.sketch([found])])
        read_back([sketch_tolerance([expected], sketcher, None, None)])
    compare_outputs([found[:1024]], [expected[:1024]], None, None, "cuda", COMPARE_CHUNK)
    result = {
        "root": str(args.root),
        "device": torch.cuda.get_device_name(),
        "elements": args.elements,
        "dtype": args.dtype,
        "sketch_ms": _timed(lambda: sketch_values([sketcher.sketch([found])]), args.repeats, sync),
        "bound_ms": _timed(lambda: read_back([sketch_tolerance([expected], sketcher, None, None)]), args.repeats, sync),
        "compare_ms": _timed(
            lambda: compare_outputs([found], [expected], None, None, "cuda", COMPARE_CHUNK), args.repeats, sync
        ),
    }
    assert compare_outputs([found], [expected], None, None, "cuda", COMPARE_CHUNK) is None
    print(json.dumps(result))


if __name__ == "__main__":
    main()
