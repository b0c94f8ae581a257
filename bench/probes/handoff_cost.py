"""The cost of handing outputs over in a sealed memory file, against a file in /dev/shm.

Before 2026-11-26 the candidate wrote each output list with torch.save into a directory on /dev/shm and the reference
read it back; now the harness writes a sealed memory file and the reference opens it through /proc/PID/fd/N
(evaluators/worker/handoff.py). This times both, write and read, for a few output sizes on this machine's CPU, in one
process (the /proc path is the same kernel path from another process). The file side reads with torch.load straight
from the file, without the handoff's checks, so it is the cheaper of the two to begin with.

    python bench/probes/handoff_cost.py [--sizes-mib 1 64 256] [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from evaluators.worker.handoff import Handed, read_outputs, write_outputs  # noqa: E402


def _sealed(outputs: list[torch.Tensor]) -> tuple[float, float]:
    started = time.perf_counter()
    fd = write_outputs("s0-trial0", outputs)
    written = time.perf_counter()
    try:
        read_outputs(Handed(os.getpid(), fd, "s0-trial0"), 1 << 40)
    finally:
        os.close(fd)
    return written - started, time.perf_counter() - written


def _file(outputs: list[torch.Tensor], directory: Path) -> tuple[float, float]:
    path = directory / "s0-trial0.pt"
    started = time.perf_counter()
    torch.save(outputs, path)
    written = time.perf_counter()
    torch.load(path, map_location="cpu", weights_only=True)
    read = time.perf_counter()
    path.unlink()
    return written - started, read - written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-mib", type=int, nargs="+", default=[1, 64, 256])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    shm = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    with tempfile.TemporaryDirectory(dir=shm) as directory:
        print("size      file write  file read  sealed write  sealed read  (medians, ms)")
        for mib in args.sizes_mib:
            outputs = [torch.randn(mib << 18)]  # float32: 2^18 elements a MiB
            files = [_file(outputs, Path(directory)) for _ in range(args.runs)]
            sealed = [_sealed(outputs) for _ in range(args.runs)]
            row = [statistics.median(t[k]) * 1e3 for t in (files, sealed) for k in (0, 1)]
            print(f"{mib:>4} MiB  {row[0]:10.2f} {row[1]:10.2f} {row[2]:13.2f} {row[3]:12.2f}")


if __name__ == "__main__":
    main()
