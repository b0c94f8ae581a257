"""Which read of device memory tells the driver's clearing from noise: each kind's spread and its slowdown.

    python bench/probes/read_kinds.py [--trials 3] [--out DIR]    (on a GPU)

The drain (evaluators/worker/device_idle.py) must see the clearing of memory another process gave back: reads run
13-14 % slow through it, memsets not (bench/probes/free_trace.py). In a batch, its 256 MiB `sum()` spread by +-30 %
from pair to pair while the memset after it stayed within 2 % (bench/probes/drain_fills.py). Here each kind of read
of 256 MiB is timed, each followed by a memset, as the drain does: 0.5 ms apart on a quiet device, right after another
process's 50 ms of matrix products, and through the clearing of 8 GiB another process gives back. Per kind: the quiet
spread (10th, 50th, 90th percentiles, as a multiple of the median), the first pair's slowdown after the other
process's work, and the median slowdown of the pairs inside the clearing (those in its first 10 ms). Writes
read_kinds.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import time
from pathlib import Path

import torch

GIB, BYTES = 1 << 30, 256 << 20


def other(pipe) -> None:
    torch.cuda.init()
    a = torch.randn(4096, 4096, device="cuda")
    held = None
    pipe.send("ready")
    while (cmd := pipe.recv()) != "stop":
        if cmd == "hold":
            held = torch.empty(8 * GIB, dtype=torch.int8, device="cuda")
            held.fill_(1)
        elif cmd == "give":
            del held
            held = None
            torch.cuda.empty_cache()
        elif cmd == "work":
            started = time.perf_counter()
            while time.perf_counter() - started < 0.05:
                a @ a
        torch.cuda.synchronize()
        pipe.send("done")


def kinds() -> dict:
    x = torch.zeros(BYTES // 4, device="cuda")
    rows = x.view(-1, 4096)
    small = torch.empty(4096, device="cuda")
    return {
        "sum": lambda: x.sum(),
        "row_sum": lambda: torch.sum(rows, dim=1),
        "amax": lambda: x.amax(),
        "col_sum": lambda: torch.sum(rows, dim=0, out=small),
        "copy_half": lambda: x[: x.numel() // 2].copy_(x[x.numel() // 2 :]),
    }, x


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("."))
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    ours, theirs = ctx.Pipe()
    proc = ctx.Process(target=other, args=(theirs,))
    proc.start()
    reads, x = kinds()
    for read in reads.values():
        read()
        x.zero_()
    torch.cuda.synchronize()
    assert ours.recv() == "ready"

    def pair(read) -> tuple[float, float]:
        start, between, end = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        start.record()
        read()
        between.record()
        x.zero_()
        end.record()
        end.synchronize()
        return start.elapsed_time(between), between.elapsed_time(end)

    def ask(cmd: str) -> None:
        ours.send(cmd)
        assert ours.recv() == "done"

    out: dict = {name: {"quiet": [], "after_work": [], "clearing": []} for name in reads}
    for _ in range(args.trials):
        for name, read in reads.items():
            for _ in range(100):
                out[name]["quiet"].append(pair(read))
                time.sleep(0.5e-3)
            for _ in range(5):
                ask("work")
                out[name]["after_work"].append([pair(read) for _ in range(3)])
            for _ in range(3):
                ask("hold")
                time.sleep(0.2)
                ask("give")
                started, seen = time.perf_counter(), []
                while time.perf_counter() - started < 0.01:
                    seen.append(pair(read))
                    time.sleep(0.2e-3)
                out[name]["clearing"].append(seen)
                time.sleep(0.1)
    ours.send("stop")
    proc.join()
    summary = {}
    for name, seen in out.items():
        base_r = statistics.median(r for r, _ in seen["quiet"])
        base_f = statistics.median(f for _, f in seen["quiet"])
        quiet = sorted(r / base_r for r, _ in seen["quiet"])
        ratios = sorted((r / f) / (base_r / base_f) for r, f in seen["quiet"])
        n = len(quiet) - 1
        summary[name] = {
            "read_ms": base_r,
            "fill_ms": base_f,
            "quiet_read_p10_p50_p90": [quiet[int(n * q)] for q in (0.1, 0.5, 0.9)],
            "quiet_ratio_p10_p50_p90": [ratios[int(n * q)] for q in (0.1, 0.5, 0.9)],
            "after_work_first": statistics.median(p[0][0] / base_r for p in seen["after_work"]),
            "after_work_second": statistics.median(p[1][0] / base_r for p in seen["after_work"]),
            "after_work_first_fill": statistics.median(p[0][1] / base_f for p in seen["after_work"]),
            "clearing_read": statistics.median(r / base_r for trial in seen["clearing"] for r, _ in trial),
            "clearing_fill": statistics.median(f / base_f for trial in seen["clearing"] for _, f in trial),
            "clearing_pairs": sum(len(trial) for trial in seen["clearing"]),
        }
        print(name, json.dumps(summary[name], default=str))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "read_kinds.json").write_text(
        json.dumps({"device": torch.cuda.get_device_name(), "summary": summary, "raw": out})
    )


if __name__ == "__main__":
    main()
