"""What giving device memory back costs the giver in kernel CPU time, and how long after its call the slowdown lasts.

`python bench/probes/free_trace.py [--trials 3] [--out DIR]` on a GPU. A second process (the giver) runs one action per
command while this one runs, back to back, sums over 8 GiB, 1 GiB and 64 MiB, a sum over the 512 MiB flush buffer, a
page-strided read of the 8 GiB (one float per 64 KiB: few bytes, many pages) and a memset of the flush buffer. Actions:
give back 24 or 8 GiB held in 1 GiB blocks, take and give back 1 GiB 24 times over ("churn"), and an honest timing block
(20 flush-and-matmul repetitions, then a copy to the host). For each: the giver's kernel-mode CPU time over the action
(getrusage, and /proc's tick-sampled figure that another process reads), its host time, and per kernel here the slow
stretch (calls over 3 % above their median before), timed from the end of the giver's call. Writes free_trace.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import statistics
import time
from pathlib import Path

import torch

GIB = 1 << 30


def stat_stime_s(pid: int) -> float:
    """Kernel-mode CPU time of every thread of `pid`, as /proc shows another process (clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[12]) / os.sysconf("SC_CLK_TCK")


def giver(pipe) -> None:
    torch.cuda.init()
    flush = torch.empty(512 << 20, dtype=torch.int8, device="cuda")
    a = torch.randn(4096, 4096, device="cuda")

    def take(gib: int) -> list:
        blocks = [torch.empty(GIB, dtype=torch.int8, device="cuda") for _ in range(gib)]
        for block in blocks:
            block.fill_(1)
        torch.cuda.synchronize()
        return blocks

    held = None
    pipe.send("ready")
    while (cmd := pipe.recv()) != "stop":
        if cmd.startswith("hold"):
            held = take(int(cmd[4:]))
            pipe.send("held")
            continue
        before, ticks = resource.getrusage(resource.RUSAGE_SELF), stat_stime_s(os.getpid())
        started = time.perf_counter()
        if cmd == "give":
            del held
            held = None
            torch.cuda.empty_cache()
        elif cmd == "churn":
            for _ in range(24):
                block = torch.empty(GIB, dtype=torch.int8, device="cuda")
                block.fill_(1)
                torch.cuda.synchronize()
                del block
                torch.cuda.empty_cache()
        elif cmd == "honest":
            outs = []
            for _ in range(20):
                flush.zero_()
                outs.append(a @ a)
            torch.cuda.synchronize()
            outs[-1][:64, :64].cpu()
        returned = time.perf_counter()
        after = resource.getrusage(resource.RUSAGE_SELF)
        pipe.send({"started": started, "returned": returned, "host_ms": (returned - started) * 1e3,
                   "stime_ms": (after.ru_stime - before.ru_stime) * 1e3,
                   "utime_ms": (after.ru_utime - before.ru_utime) * 1e3,
                   "proc_stime_ms": (stat_stime_s(os.getpid()) - ticks) * 1e3})  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("."))
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    ours, theirs = ctx.Pipe()
    other = ctx.Process(target=giver, args=(theirs,))
    other.start()
    x = torch.randn(8 * GIB // 4, device="cuda")
    flush = torch.empty(512 << 20, dtype=torch.int8, device="cuda")
    kernels = {
        "sum_8gib": lambda: x.sum(),
        "sum_1gib": lambda: x[: GIB // 4].sum(),
        "sum_64mib": lambda: x[: (64 << 20) // 4].sum(),
        "read_flush": lambda: flush.view(torch.float32).sum(),
        "pages_64k": lambda: x.view(-1, 16384)[:, 0].sum(),
        "memset_512m": lambda: flush.zero_(),
    }
    for run in kernels.values():
        run()
    torch.cuda.synchronize()
    assert ours.recv() == "ready"

    def trace(cmd: str) -> tuple[dict, dict]:
        """550 ms of the kernels in turn; `cmd` sent to the giver 100 ms in; each kernel's points (host s, ms)."""
        first = torch.cuda.Event(enable_timing=True)
        first.record()
        torch.cuda.synchronize()
        zero = time.perf_counter()
        marks = []
        for _ in range(250):
            row = [torch.cuda.Event(enable_timing=True) for _ in range(len(kernels) + 1)]
            row[0].record()
            for run, mark in zip(kernels.values(), row[1:], strict=True):
                run()
                mark.record()
            marks.append(row)
        while time.perf_counter() - zero < 0.1:
            time.sleep(1e-4)
        ours.send(cmd)
        torch.cuda.synchronize()
        points = {name: [(zero + first.elapsed_time(row[i]) / 1e3, row[i].elapsed_time(row[i + 1])) for row in marks]
                  for i, name in enumerate(kernels)}  # fmt: skip
        return points, ours.recv()

    rows = []
    for trial in range(args.trials):
        for action, hold in (("give", 24), ("give", 8), ("churn", 0), ("honest", 0)):
            if hold:
                ours.send(f"hold{hold}")
                assert ours.recv() == "held"
                time.sleep(0.3)
            points, seen = trace(action)
            row = {"trial": trial, "action": f"{action}{hold or ''}", "giver": seen}
            for name, series in points.items():
                before = [ms for t, ms in series if t < seen["started"]]
                base = statistics.median(before)
                slow = [(t - seen["returned"], ms) for t, ms in series if t >= seen["started"] and ms > base * 1.03]
                row[name] = {"base_ms": base, "slow_calls": len(slow),
                             "slow_until_after_return_ms": slow[-1][0] * 1e3 if slow else None,
                             "excess": statistics.median(ms for _, ms in slow) / base - 1 if slow else 0.0}  # fmt: skip
            rows.append(row)
            print(json.dumps(row), flush=True)
    ours.send("stop")
    other.join()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "free_trace.json").write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows}))


if __name__ == "__main__":
    main()
