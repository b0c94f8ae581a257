"""Whether work on a host's other GPUs stalls a timing on this one: a timed loop's host-side excess, alone and not.

    python bench/cross_gpu_stall.py [--iters 120] [--out FILE]

GPU 0 times five 8192^2 fp16 GEMMs per iteration with CUDA events and with the host clock around them; the
excess (host minus events) is what a parent's clock would see beyond the device's time. Each phase runs it twice:
with no allocation in the loop, and with a 512 MiB allocation freed back to the driver each iteration (a
harness drawing fresh inputs whose memory the caching allocator must get from the driver). Phases: alone; beside
the other GPUs allocating and freeing 20 GiB in a loop; beside processes that open a CUDA context with 20 GiB on
the other GPUs and exit, over and over (worker starts and teardowns).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

ALLOC_LOOP = """
import sys, torch
torch.cuda.set_device(int(sys.argv[1]))
while True:
    x = torch.empty(20 * 2**30, dtype=torch.uint8, device="cuda"); x.fill_(1); del x; torch.cuda.empty_cache()
"""
CONTEXT_ONCE = "import torch; x = torch.empty(20 * 2**30, dtype=torch.uint8, device='cuda'); x.fill_(1)"


def excess(iters: int, allocate: bool) -> list[float]:
    a = torch.randn(8192, 8192, device="cuda:0", dtype=torch.half)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    out = []
    for _ in range(iters):
        if allocate:
            buf = torch.empty(512 * 2**20, dtype=torch.uint8, device="cuda:0")
            del buf
            torch.cuda.empty_cache()
        began = time.perf_counter()
        start.record()
        for _ in range(5):
            a @ a
        end.record()
        end.synchronize()
        out.append((time.perf_counter() - began) * 1e3 - start.elapsed_time(end))
    return out


def summary(values: list[float]) -> dict:
    values = sorted(values)
    return {"median_ms": statistics.median(values), "p90_ms": values[int(0.9 * len(values))], "max_ms": values[-1]}


def churners(kind: str) -> list[subprocess.Popen]:
    gpus = range(1, torch.cuda.device_count())
    if kind == "alloc":
        return [subprocess.Popen([sys.executable, "-c", ALLOC_LOOP, str(g)]) for g in gpus]
    loop = f'while true; do "{sys.executable}" -c "{CONTEXT_ONCE}"; done'  # this Python: the one with torch
    return [subprocess.Popen(["bash", "-c", loop], env=os.environ | {"CUDA_VISIBLE_DEVICES": str(g)},
                             start_new_session=True) for g in gpus]  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iters", type=int, default=120)
    p.add_argument("--out")
    args = p.parse_args()
    excess(10, False)
    report = {"gpu": torch.cuda.get_device_name(0), "gpus": torch.cuda.device_count()}
    for phase in ("alone", "alloc", "contexts"):
        procs = [] if phase == "alone" else churners(phase)
        time.sleep(0 if phase == "alone" else 8)  # the churn under way
        for allocate in (False, True):
            report[f"{phase}, {'allocating' if allocate else 'no allocation'}"] = summary(excess(args.iters, allocate))
        for proc in procs:
            subprocess.run(["kill", "-9", f"-{proc.pid}"], capture_output=True) if phase == "contexts" else proc.kill()
    for name, row in report.items():
        print(name, row)
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(report, handle, indent=2)


if __name__ == "__main__":
    main()
