"""A process's first device work right after another process's, timed, and whether it waits for work left queued.

The reference's pin of a candidate's block (evaluators/worker/pins.py) ran a median 0.44-0.49 ms a block longer than
its pin of its own outputs on level 1 (two H200s), whether its two IPC opens took 0.29 or 0.09 ms an output. Its own
pin comes right after its own block; the candidate's right after the candidate's, in another CUDA context. This probe
times a pin's device work (a sample of 4096 bytes at random places, then a synchronize) in one process, the prober,
right after a burst of copies in itself or in another process, on its own memory or on the other's (opened once
through CUDA IPC and kept), and a one-element add right after the other process queued a burst without waiting for
it: whether the prober's work waits for the other context's.

    python bench/probes/context_switch.py [--rounds 40] [--burst-ms 1.0] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch
import torch.multiprocessing as mp

MIB = 1 << 20


def other(conn, elements: int) -> None:
    """The other process: shares its tensor, then runs a burst of copies on each command, synchronized or not."""
    source = torch.ones(elements, device="cuda")
    target = torch.empty_like(source)
    conn.send(source)
    while (command := conn.recv()) != "stop":
        copies, wait = command
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(copies):
            target.copy_(source)
        end.record()
        if wait:
            torch.cuda.synchronize()
            conn.send(start.elapsed_time(end))
        else:
            conn.send(None)
            end.synchronize()


def start_other(elements: int):
    """The other process, started: (the pipe to it, the process); its first message is its shared tensor."""
    context = mp.get_context("spawn")
    ours, theirs = context.Pipe()
    process = context.Process(target=other, args=(theirs, elements), daemon=True)
    process.start()
    return ours, process


def sample_ms(tensor: torch.Tensor) -> float:
    """A pin's work on `tensor`, by the host's clock: its generator, 4096 places drawn, their bytes read, a sync."""
    started = time.perf_counter()
    raw = tensor.view(torch.uint8)
    generator = torch.Generator(device="cuda")
    generator.manual_seed(12345)
    places = torch.randint(raw.numel(), (4096,), generator=generator, device="cuda")
    raw[places].sum()
    torch.cuda.synchronize()
    return (time.perf_counter() - started) * 1e3


def tiny_ms(tensor: torch.Tensor) -> float:
    started = time.perf_counter()
    tensor[:1].add_(1)
    torch.cuda.synchronize()
    return (time.perf_counter() - started) * 1e3


def parser_for(doc: str, rounds: int) -> argparse.ArgumentParser:
    """The two-process probes' flags: rounds, the burst's length, the tensors' size, where the data goes."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--burst-ms", type=float, default=1.0)
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--out", type=Path)
    return parser


def main() -> None:
    args = parser_for(__doc__, 40).parse_args()
    elements = args.mib * MIB // 4
    ours, process = start_other(elements)
    shared = ours.recv()  # the other's memory, mapped here through CUDA IPC and kept
    own = torch.ones(elements, device="cuda")
    own_target = torch.empty_like(own)
    # Copies for a burst of --burst-ms, from the other's timing of a 20-copy burst.
    ours.send((20, True))
    copies = max(1, round(args.burst_ms / (ours.recv() / 20)))
    for warm in (own, shared):
        sample_ms(warm), tiny_ms(own)

    def own_burst() -> None:
        for _ in range(copies):
            own_target.copy_(own)
        torch.cuda.synchronize()

    def their_burst(wait: bool) -> None:
        ours.send((copies, wait))
        ours.recv()

    cases = {
        "own memory after own burst": lambda: (own_burst(), sample_ms(own))[1],
        "own memory after their burst": lambda: (their_burst(True), sample_ms(own))[1],
        "their memory after own burst": lambda: (own_burst(), sample_ms(shared))[1],
        "their memory after their burst": lambda: (their_burst(True), sample_ms(shared))[1],
        "one add after own burst": lambda: (own_burst(), tiny_ms(own))[1],
        "one add after their burst": lambda: (their_burst(True), tiny_ms(own))[1],
        "one add while their burst runs": lambda: (their_burst(False), tiny_ms(own))[1],
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.rounds):
        for name, case in cases.items():
            times[name].append(case())
            torch.cuda.synchronize()
            time.sleep(0.002)
    ours.send("stop")
    process.join(timeout=10)
    burst = {"copies": copies, "burst_ms": args.burst_ms, "mib": args.mib, "device": torch.cuda.get_device_name()}
    print(f"{burst['device']}: bursts of {copies} copies of {args.mib} MiB (about {args.burst_ms} ms), "
          f"{args.rounds} rounds; ms by the prober's host clock")  # fmt: skip
    for name, values in times.items():
        low, high = (statistics.quantiles(values, n=20)[i] for i in (0, -1))
        print(f"  {name}: median {statistics.median(values):.4f}, 5-95 % {low:.4f}-{high:.4f}")
    if args.out:
        args.out.write_text(json.dumps({"setup": burst, "times_ms": times}, indent=1))


if __name__ == "__main__":
    main()
