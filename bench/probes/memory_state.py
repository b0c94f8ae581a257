"""Whether the device's memory state, at a process's first call or as it allocates, sets a call's speed.

    python bench/probes/memory_state.py PROBLEM.py VARIANT [VARIANT ...]

Each VARIANT runs in a fresh process that builds the problem's Model under seed 0 on the device and makes its first
call, then empties its allocator's cache and times 20 calls with CUDA events (the median), and lists the kernels of
one profiled call over 0.5 ms with their grid and block:

- `plain`: the first call on the whole device;
- `first:GIB`: the first call made with only GIB free (the rest taken by a filler, given back before the timed calls);
- `after:GIB`: the first call on the whole device, then the same filler taken and given back before the timed calls.

With `CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG=FILE` cuDNN logs the engine and knobs each process chose. Asked why
level2/77 ran at 4.9 or 6.4 ms by the process inside the harness (docs/BENCHMARKS_HISTORY.md). The figures there came
from this computation as two one-off scripts on an H200; this file lays them out as one, and was not rerun.
"""

from __future__ import annotations

import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile

import torch
from torch.profiler import ProfilerActivity, profile


def _filler(free_gib: float) -> torch.Tensor:
    free = torch.cuda.mem_get_info()[0]
    return torch.empty(max(0, free - int(free_gib * 2**30)), dtype=torch.uint8, device="cuda")


def child(path: str, variant: str) -> None:
    kind, _, gib = variant.partition(":")
    spec = importlib.util.spec_from_file_location("problem", path)
    problem = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(problem)
    torch.manual_seed(0)
    model = problem.Model(*problem.get_init_inputs()).cuda()
    args = [a.cuda() if isinstance(a, torch.Tensor) else a for a in problem.get_inputs()]
    torch.cuda.synchronize()
    with torch.no_grad():
        filler = _filler(float(gib)) if kind == "first" else None
        free_at_first = torch.cuda.mem_get_info()[0] / 2**30
        model(*args)
        torch.cuda.synchronize()
        del filler
        if kind == "after":
            filler = _filler(float(gib))
            torch.cuda.synchronize()
            del filler
        torch.cuda.empty_cache()
        for _ in range(3):
            model(*args)
        torch.cuda.synchronize()
        times = []
        for _ in range(20):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            model(*args)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            model(*args)
            torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as trace:
        prof.export_chrome_trace(trace.name)
        events = json.load(open(trace.name))["traceEvents"]
    kernels = [
        (e["name"][:60], e["args"].get("grid"), e["args"].get("block"), round(e["dur"] / 1e3, 3))
        for e in events
        if e.get("cat") == "kernel" and e.get("dur", 0) > 500
    ]
    print(json.dumps({"variant": variant, "free_at_first_gib": round(free_at_first, 1),
                      "median_ms": round(statistics.median(times), 3), "kernels": kernels}))  # fmt: skip


def main() -> None:
    if sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
        return
    for variant in sys.argv[2:]:
        command = [sys.executable, __file__, "--child", sys.argv[1], variant]
        done = subprocess.run(command, capture_output=True, text=True)
        print(sys.argv[1].rsplit("/", 1)[-1][:28], done.stdout.strip() or done.stderr[-600:], flush=True)


if __name__ == "__main__":
    main()
