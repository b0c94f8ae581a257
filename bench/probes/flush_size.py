"""Whether a flush of twice the GPU's L2 evicts it as 512 MB does, and what each costs a repetition.

    python bench/probes/flush_size.py [--input-mb 16] [--reps 60]

Per flush size (none, worker/timing.flush_size's, 512 MB): the flush's own device time, then a sum over an input
written just before it (hot in L2, as a freshly drawn input is), both by events; medians of --reps. Where the sum reads
the same after both flushes, the smaller one evicts what the larger does. Needs a CUDA GPU.
"""

from __future__ import annotations

import argparse
import statistics

import torch

from evaluators.worker.timing import flush_size


def timed(flush_mb: int, data: torch.Tensor, reps: int) -> tuple[float, float]:
    """(the flush's ms, the sum's ms after it): medians of `reps`."""
    buffer = torch.empty(max(flush_mb, 1) << 20, dtype=torch.int8, device="cuda")
    flushes, sums = [], []
    for _ in range(reps):
        start, flushed, summed = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        data.add_(0)  # written, so hot in L2
        start.record()
        if flush_mb:
            buffer.zero_()
        flushed.record()
        data.sum()
        summed.record()
        summed.synchronize()
        flushes.append(start.elapsed_time(flushed))
        sums.append(flushed.elapsed_time(summed))
    return statistics.median(flushes), statistics.median(sums)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input-mb", type=int, default=16)
    parser.add_argument("--reps", type=int, default=60)
    args = parser.parse_args()
    sized = flush_size(None, "cuda")
    l2 = torch.cuda.get_device_properties(0).L2_cache_size >> 20
    print(f"{torch.cuda.get_device_name(0)}: L2 {l2} MB, flush_size {sized} MB")
    data = torch.randn((args.input_mb << 20) // 4, device="cuda")
    for mb in (0, sized, 512):
        flush_ms, sum_ms = timed(mb, data, args.reps)
        print(f"flush {mb:4d} MB: the flush {flush_ms:.4f} ms, a {args.input_mb} MB sum after it {sum_ms:.4f} ms")


if __name__ == "__main__":
    main()
