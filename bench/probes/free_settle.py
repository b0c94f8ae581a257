"""Whether memory another process gives back or takes slows memory-bound kernels, and whether free memory says how long.

`python bench/probes/free_settle.py [--free-gib 24] [--read-gib 8] [--trials 3] [--out DIR]` on a GPU. A second
process holds --free-gib (touched) and gives it back (del, torch.cuda.empty_cache), then takes it again, each while
this one runs a memory-bound kernel (a sum over --read-gib) back to back, each sum followed by a memset of the
harness's flush buffer (512 MiB); then it gives the memory back again with this process waiting, before it times,
until the device's free memory (torch.cuda.mem_get_info) has stopped rising. Prints per trial and kernel its median
time before, the slow stretch after (calls over 3 % slower: how many, until when, by how much), when the other
process saw its free memory settle, and what taking the memory again cost it at once and later. Writes
free_settle.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import time
from pathlib import Path

import torch

GIB = 1 << 30


def free_memory_settled(poll_s: float = 0.5e-3, still: int = 4, deadline_s: float = 2.0) -> float:
    """Seconds until the device's free memory stopped rising for `still` polls in a row."""
    started = time.perf_counter()
    last, same = torch.cuda.mem_get_info()[0], 0
    while same < still and time.perf_counter() - started < deadline_s:
        time.sleep(poll_s)
        now = torch.cuda.mem_get_info()[0]
        same = same + 1 if now <= last else 0
        last = max(last, now)
    return time.perf_counter() - started


def holder(pipe, gib: int) -> None:
    """The other process: holds `gib`, and answers each command.

    "free": give it back, then watch the device's free memory for 300 ms; "take": allocate it again; "free_take":
    give it back and take it again at once (what the allocation costs then).
    """
    torch.cuda.init()

    def take() -> tuple[list, float]:
        started = time.perf_counter()
        blocks = [torch.empty(GIB, dtype=torch.int8, device="cuda") for _ in range(gib)]
        torch.cuda.synchronize()
        return blocks, time.perf_counter() - started

    blocks, _ = take()
    for block in blocks:
        block.fill_(1)
    pipe.send("ready")
    while (cmd := pipe.recv()) != "stop":
        if cmd == "take":
            at = time.perf_counter()
            blocks, took = take()
            pipe.send({"took_at": at, "take_s": took})
            continue
        at = time.perf_counter()
        del blocks
        torch.cuda.empty_cache()
        returned = time.perf_counter()
        if cmd == "free_take":
            blocks, took = take()
            pipe.send({"freed_at": at, "empty_cache_s": returned - at, "take_at_once_s": took})
            continue
        curve = []
        while time.perf_counter() - at < 0.3:
            curve.append((time.perf_counter() - at, torch.cuda.mem_get_info()[0] / GIB))
            time.sleep(0.5e-3)
        final = curve[-1][1]
        settled = next((t for t, free in curve if free >= final - 0.01), None)
        pipe.send({"freed_at": at, "empty_cache_s": returned - at, "free_settled_s": settled, "free_gib": final,
                   "free_right_after_gib": curve[0][1]})  # fmt: skip


def timed_run(x: torch.Tensor, seconds: float) -> tuple[float, list[tuple[float, float]]]:
    """Back-to-back sums over `x` for about `seconds` of device time: (host time of the first event, [(start, ms)])."""
    first = torch.cuda.Event(enable_timing=True)
    first.record()
    torch.cuda.synchronize()
    zero = time.perf_counter()
    events = []
    per_call = 2e-3
    for _ in range(int(seconds / per_call)):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        x.sum()
        e.record()
        events.append((s, e))
    torch.cuda.synchronize()
    return zero, [(zero + first.elapsed_time(s) / 1e3, s.elapsed_time(e)) for s, e in events]


def stretch(points: list[tuple[float, float]], since: float, base: float) -> dict:
    """The slow stretch after `since`: calls over 3 % above `base`, how long they lasted and their median excess."""
    after = [(t - since, ms) for t, ms in points if t >= since]
    slow = [(t, ms) for t, ms in after if ms > base * 1.03]
    if not slow:
        return {"slow_calls": 0, "slow_until_ms": 0.0, "excess": 0.0}
    return {"slow_calls": len(slow), "slow_until_ms": slow[-1][0] * 1e3,
            "excess": statistics.median(ms for _, ms in slow) / base - 1}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--free-gib", type=int, default=24)
    parser.add_argument("--read-gib", type=int, default=8)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("."))
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    ours, theirs = ctx.Pipe()
    other = ctx.Process(target=holder, args=(theirs, args.free_gib))
    other.start()
    x = torch.randn(args.read_gib * GIB // 4, device="cuda")
    for _ in range(5):
        x.sum()
    torch.cuda.synchronize()
    assert ours.recv() == "ready"
    flush = torch.empty(512 << 20, dtype=torch.int8, device="cuda")  # the harness's flush buffer's size

    def queue_with(signal: str) -> tuple[list, list, dict]:
        """(sums, memsets, reply): 400 ms of sums, each followed by a flush-sized memset; `signal` sent 50 ms in."""
        first = torch.cuda.Event(enable_timing=True)
        first.record()
        torch.cuda.synchronize()
        zero = time.perf_counter()
        events = []
        for _ in range(200):
            marks = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
            marks[0].record()
            x.sum()
            marks[1].record()
            flush.zero_()
            marks[2].record()
            events.append(marks)
        while time.perf_counter() - zero < 0.05:
            time.sleep(1e-4)
        ours.send(signal)
        torch.cuda.synchronize()
        sums = [(zero + first.elapsed_time(a) / 1e3, a.elapsed_time(b)) for a, b, _ in events]
        memsets = [(zero + first.elapsed_time(b) / 1e3, b.elapsed_time(c)) for _, b, c in events]
        return sums, memsets, ours.recv()

    def measured(trial: int, mode: str, since: float, sums: list, memsets: list, seen: dict, waited=None) -> None:
        row = {"trial": trial, "mode": mode, "waited_s": waited, "other": seen}
        for name, points in (("sum", sums), ("memset", memsets)):
            if not points:
                continue
            before = [ms for t, ms in points if t < since]
            base = statistics.median(before) if before else statistics.median(ms for _, ms in points[-50:])
            row[name] = {"base_ms": base, **stretch(points, since, base)}
        rows.append(row)
        print(json.dumps(row), flush=True)

    rows = []
    for trial in range(args.trials):
        # Given back while the other process's queue runs; then taken again, likewise.
        sums, memsets, seen = queue_with("free")
        measured(trial, "free", seen["freed_at"], sums, memsets, seen)
        sums, memsets, seen = queue_with("take")
        measured(trial, "take", seen["took_at"], sums, memsets, seen)
        # Given back, then this process waits for the device's free memory to hold still before it times.
        ours.send("free")
        time.sleep(0.002)
        waited = free_memory_settled()
        _, sums = timed_run(x, 0.4)
        seen = ours.recv()
        measured(trial, "free_then_settle", seen["freed_at"], sums, [], seen, waited)
        ours.send("take")
        ours.recv()
        ours.send("free_take")
        seen = ours.recv()
        rows.append({"trial": trial, "mode": "free_take", "other": seen})
        print(json.dumps(rows[-1]), flush=True)
    ours.send("stop")
    other.join()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "free_settle.json").write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows}))


if __name__ == "__main__":
    main()
