"""What moves a timed median on a GPU: another process opening a CUDA context, or the card's heat.

`python bench/probes/timing_noise.py [--rounds N] [--out DIR]` on a GPU. Written after evaluations of problems'
references against themselves came out at 0.77x-1.18x on single shapes, while spare worker processes started beside
them. Times two workloads with triton.testing.do_bench (median of 100 ms), N times back to back, in four conditions:
quiet; while 16 other processes (torch already imported) open a CUDA context each, 0.1 s apart; the same with each
opening under the evaluator's per-GPU timing lock, which the timing holds; and right after 2 s of the workload back to
back. Prints each condition's median, min and max; writes timing_noise.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import nullcontext
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
import triton.testing  # noqa: E402

from evaluators.worker.device_lock import device_key, device_lock  # noqa: E402

# A process that imports torch, waits for a line on stdin, then opens a CUDA context (under the timing lock when a
# lock directory is given) and exits.
OPENER = r"""
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from contextlib import nullcontext
import torch
from evaluators.worker.device_lock import device_key, device_lock
sys.stdin.readline()
lock = device_lock(Path(sys.argv[2]), device_key("cuda")) if len(sys.argv) > 2 else nullcontext()
with lock:
    torch.empty(1, device="cuda")
    torch.cuda.synchronize()
"""


class Openers:
    """COUNT processes with torch imported, released one every EVERY_S while the timing runs."""

    COUNT, EVERY_S = 16, 0.1

    def __init__(self, lock_dir: Path | None):
        args = [sys.executable, "-c", OPENER, str(Path(__file__).resolve().parents[2])]
        args += [str(lock_dir)] if lock_dir else []
        self.procs = [subprocess.Popen(args, stdin=subprocess.PIPE) for _ in range(self.COUNT)]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._release, daemon=True)

    def _release(self) -> None:
        for proc in self.procs:
            if self.stop.wait(self.EVERY_S):
                break
            proc.stdin.write(b"go\n")
            proc.stdin.flush()

    def __enter__(self) -> Openers:
        time.sleep(20.0)  # every process past importing torch
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()
        for proc in self.procs:
            proc.stdin.close()
            proc.wait()


def workloads() -> dict:
    """Two workloads like problems that moved, in our own code.

    KernelBench level 2 problem 9's GEMM (linear, subtract, multiply, ReLU, fp32, 1024 x 8192 x 8192), and a 0.1 ms
    residual add and layer norm (4096 x 4096 fp32).
    """
    linear = torch.nn.Linear(8192, 8192, device="cuda")
    x = torch.rand(1024, 8192, device="cuda")
    a, b = torch.randn(4096, 4096, device="cuda"), torch.randn(4096, 4096, device="cuda")

    def gemm():
        with torch.no_grad():
            torch.relu((linear(x) - 2.0) * 1.5)

    def small():
        torch.nn.functional.layer_norm(a + b, (4096,))

    return {"gemm": gemm, "residual_norm": small}


def medians(call, rounds: int, lock_dir: Path | None, before=lambda: None) -> list[float]:
    """do_bench medians (100 ms each), back to back unless `before` waits or heats."""
    out = []
    for _ in range(rounds):
        before()
        with device_lock(lock_dir, device_key("cuda")) if lock_dir else nullcontext():
            out.append(triton.testing.do_bench(call, rep=100, return_mode="median"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--out", type=Path, default=Path("."))
    args = parser.parse_args()
    lock_dir = Path(tempfile.mkdtemp(prefix="ks-lock-"))
    table, facts = [], {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "rows": {}}
    print(f"{facts['gpu']}, torch {facts['torch']}; {Openers.COUNT} contexts opened {Openers.EVERY_S} s apart")
    for name, call in workloads().items():
        call()

        def heat(call=call):
            end = time.perf_counter() + 2.0
            while time.perf_counter() < end:
                call()
            torch.cuda.synchronize()

        rows = {"quiet": medians(call, args.rounds, None)}
        with Openers(None):
            rows["contexts opening"] = medians(call, args.rounds, None)
        with Openers(lock_dir):
            rows["contexts opening, locked"] = medians(call, args.rounds, lock_dir)
        rows["after 2 s of heat"] = medians(call, args.rounds, None, before=heat)
        quiet = statistics.median(rows["quiet"])
        for condition, values in rows.items():
            mid = statistics.median(values)
            spread = f"{min(values):.4g} | {max(values):.4g} | {max(values) / quiet:.3f}"
            table.append(f"| {name} | {condition} | {mid:.4g} | {spread} |")
        facts["rows"][name] = rows
    print("| workload | condition | median ms | min ms | max ms | max / quiet median |")
    print("| --- | --- | --- | --- | --- | --- |")
    print("\n".join(table))
    (args.out / "timing_noise.json").write_text(json.dumps(facts, indent=1))


if __name__ == "__main__":
    main()
