"""What one timed repetition's check costs the reference, part by part, on a GPU.

`python bench/probes/check_reps_parts.py [--mib 128] [--blocks 12] [--reps 10] [--no-event]`: a producer process
(standing in for the candidate) keeps each block's `--reps` copies of one float32 output in a pool of their own and
shares them as a timing block does; this process (standing in for the reference) then checks two of them as
check_reps does, and lets go of the others' counts. Prints the median milliseconds of each part: the descriptor read
and the IPC open (without the producer's event with `--no-event`, as a pin opens them), the pin's sample of it
(worker/pins.py; a digest of every byte before), the element-wise comparison, the drop (the IPC close and the
count), and release_unread for one copy.
"""

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from evaluators.worker.compare import compare_outputs  # noqa: E402
from evaluators.worker.device_handoff import open_shared, release_unread  # noqa: E402
from evaluators.worker.handoff import Handed  # noqa: E402
from evaluators.worker.pins import Sample  # noqa: E402

PRODUCER = r"""
import os, sys, torch
sys.path.insert(0, sys.argv[1])
from evaluators.worker.device_handoff import HeldOutputs, share_outputs
elements, blocks, reps = map(int, sys.argv[2:5])
held = HeldOutputs("cuda")
for block in range(blocks):
    held.release(keep_pool=True)
    with held.allocating():
        copies = [[torch.full((elements,), float(block), device="cuda")] for _ in range(reps)]
    fds = [share_outputs(f"s0-rep{k}", outputs) for k, outputs in enumerate(copies)]
    for outputs in copies:
        held.hold(outputs)
    del copies
    torch.cuda.synchronize()
    print(os.getpid(), *fds, flush=True)
    sys.stdin.readline()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=128)
    parser.add_argument("--blocks", type=int, default=12)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--no-event", action="store_true", help="open without the producer's event, as a pin does")
    args = parser.parse_args()
    elements = (args.mib << 20) // 4
    producer = subprocess.Popen(
        [sys.executable, "-c", PRODUCER, str(ROOT), str(elements), str(args.blocks), str(args.reps)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    torch.zeros(1, device="cuda")  # the context the sample's kernels load into
    parts = {"open": [], "sample": [], "compare": [], "drop": [], "release_unread": []}
    try:
        for block in range(args.blocks):
            pid, *fds = map(int, producer.stdout.readline().split())
            wanted = [torch.full((elements,), float(block), device="cuda")]
            for k, fd in enumerate(fds):
                handed = Handed(pid, fd, f"s0-rep{k}")
                if k >= 2:
                    started = time.perf_counter()
                    release_unread(handed)
                    parts["release_unread"].append(time.perf_counter() - started)
                    continue
                started = time.perf_counter()
                found = open_shared(handed, 1 << 40, wait_event=not args.no_event)
                opened = time.perf_counter()
                samples = [Sample(t) for t in found]
                torch.cuda.synchronize()
                sampled = time.perf_counter()
                holds = all(sample.holds(t) for sample, t in zip(samples, found, strict=True))
                checked = time.perf_counter()  # the sample's check is not the comparison's time
                assert holds
                assert compare_outputs(found, wanted, 1e-5, 1e-5, "cuda", 32 << 20) is None
                compared = time.perf_counter()
                del found
                dropped = time.perf_counter()
                for name, (a, b) in {"open": (started, opened), "sample": (opened, sampled),
                                     "compare": (checked, compared), "drop": (compared, dropped)}.items():  # fmt: skip
                    parts[name].append(b - a)
            producer.stdin.write("next\n")
            producer.stdin.flush()
    finally:
        producer.communicate("done\n", timeout=60)
    print(f"{args.mib} MiB output, {args.blocks} blocks of {args.reps}: median ms (first block left out)")
    for name, seconds in parts.items():
        kept = seconds[2:] if name != "release_unread" else seconds[args.reps - 2 :]
        print(f"  {name:15s} {statistics.median(kept) * 1e3:8.3f}  (max {max(kept) * 1e3:.3f})")


if __name__ == "__main__":
    main()
