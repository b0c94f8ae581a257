"""Which kernels one KernelBench problem's reference runs in a fresh process, and its median there.

`python bench/probes/process_kernels.py PROBLEM.py` on a GPU, once per process wanted (a shell loop): builds the
problem's Model under seed 0 on the device, warms it up with three calls, lists the device kernels one profiled call ran
(torch.profiler), and prints the median of ten calls timed with CUDA events, beside the device's free memory. Asked
whether two processes choose different cuDNN algorithms (level1/61 and 68, level2/77: docs/BENCHMARKS_HISTORY.md). The
figures there came from this computation as a one-off script on an H200; this file is that script laid out, not rerun.
"""

from __future__ import annotations

import importlib.util
import statistics
import sys

import torch
from torch.profiler import ProfilerActivity, profile


def main() -> None:
    path = sys.argv[1]
    spec = importlib.util.spec_from_file_location("problem", path)
    problem = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(problem)
    torch.manual_seed(0)
    model = problem.Model(*problem.get_init_inputs()).cuda()
    args = [a.cuda() if isinstance(a, torch.Tensor) else a for a in problem.get_inputs()]
    free_gib = torch.cuda.mem_get_info()[0] / 2**30
    with torch.no_grad():
        for _ in range(3):
            model(*args)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            model(*args)
            torch.cuda.synchronize()
        names = sorted({e.name[:70] for e in prof.events() if e.device_type.name == "CUDA"})
        times = []
        for _ in range(10):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            model(*args)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
    median = statistics.median(times)
    print(f"{path.split('/')[-1][:30]} free {free_gib:.1f} GiB median {median:.3f} ms kernels {names}")


if __name__ == "__main__":
    main()
