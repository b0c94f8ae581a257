"""What a fresh process pays the first time the harness compares outputs, and what the worker's warm-up saves.

`python bench/probes/first_use.py [--warm] [--numel N]` on a GPU, in a fresh process: opens the CUDA context, then (with
--warm) runs the reference worker's kernel warm-up (worker/kernel_warmup.py) and times it, then times three
comparisons of N float32 elements (default 3,225,600: 12.9 MB) against a copy a little off, as the reference compares
a trial.
`--ops` instead times each operation of the comparison's float path on its first use, one by one.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

from evaluators.worker import kernel_warmup  # noqa: E402
from evaluators.worker.compare import compare_outputs  # noqa: E402


def timed(name: str, work):
    start = time.perf_counter()
    value = work()
    torch.cuda.synchronize()
    print(f"{name:24s} {(time.perf_counter() - start) * 1e3:8.2f} ms", flush=True)
    return value


def first_ops(a: torch.Tensor, b: torch.Tensor) -> None:
    """The comparison's float path (worker/compare.py), each operation timed on its first use."""
    o, r = timed("to float64", lambda: a.double()), b.double()
    finite_o = timed("isfinite", lambda: torch.isfinite(o))
    bad = timed("logical not, and", lambda: ~finite_o & torch.isfinite(r))
    timed("any, read", lambda: bool(bad.any()))
    diff = timed("sub, abs", lambda: (o - r).abs())
    diff = timed("where", lambda: torch.where(bad, torch.zeros_like(diff), diff))
    excess = timed("mul, add, sub", lambda: diff - (1e-4 + 1e-4 * r.abs()))
    timed("max, read", lambda: diff.max().item())
    rel = timed("clamp_min, div", lambda: diff / r.abs().clamp_min(torch.finfo(torch.float64).tiny))
    timed("boolean index", lambda: rel[~bad])
    timed("gt, sum, read", lambda: int((excess > 0).sum()))
    timed("argmax, read", lambda: int(excess.argmax()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm", action="store_true", help="run the worker's kernel warm-up first")
    parser.add_argument("--ops", action="store_true", help="time each operation's first use instead")
    parser.add_argument("--numel", type=int, default=3_225_600)
    args = parser.parse_args()
    timed("CUDA context", lambda: torch.empty(1, device="cuda"))
    expected = torch.rand(args.numel, device="cuda")
    found = expected + 1e-6
    if args.ops:
        first_ops(found, expected)
        return
    if args.warm:
        timed("worker's warm-up", lambda: kernel_warmup.warm("cuda", "reference"))
    for n in range(3):
        timed(f"comparison {n + 1}", lambda: compare_outputs([found], [expected], 1e-4, 1e-4, "cuda"))


if __name__ == "__main__":
    main()
