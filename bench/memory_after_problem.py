"""Device memory when a suite moves to a 6 GiB problem right after another: what the new plan sees free, and the peak.

`python bench/memory_after_problem.py --kernelbench PATH FIRST SECOND [--root TREE]`: one process evaluates FIRST, then
SECOND (files under KernelBench/, each its reference as candidate), as `evaluators.batch` does. Prints the free
bytes SECOND's memory plan saw, the peak device memory nvidia-smi saw during SECOND, and both verdicts. --root
runs another checkout's evaluator (an earlier commit) with this same script.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--kernelbench", type=Path, required=True)
parser.add_argument("first")
parser.add_argument("second")
parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
args = parser.parse_args()
sys.path.insert(0, str(args.root.resolve()))

from evaluators import EvalOptions, evaluate  # noqa: E402
from evaluators.judge import reference_pool  # noqa: E402


class PeakMemory:
    """The largest device memory in use, polled from nvidia-smi (no CUDA context of our own)."""

    def __init__(self):
        self.peak_mib, self._stop = 0, threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        query = ["nvidia-smi", "--id=0", "--query-gpu=memory.used", "--format=csv,noheader,nounits"]
        while not self._stop.is_set():
            out = subprocess.run(query, capture_output=True, text=True).stdout.strip()
            if out.isdigit():
                self.peak_mib = max(self.peak_mib, int(out))
            self._stop.wait(0.2)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def judged(name: str):
    path = args.kernelbench / "KernelBench" / name
    candidate = path.read_text() + "\n\nclass ModelNew(Model):\n    pass\n"
    start = time.perf_counter()
    result = evaluate(str(path), candidate, "cuda", EvalOptions())
    return result, time.perf_counter() - start


first, first_s = judged(args.first)
with PeakMemory() as peak:
    second, second_s = judged(args.second)
plans = {}
for key, reference in reference_pool._pool.items():
    memory = getattr(reference, "memory", None) or reference.ready["memory"]  # earlier commits had no .memory
    plans[json.loads(key)[1]] = memory
second_plan = next(m for path, m in plans.items() if path.endswith(Path(args.second).name))
print(
    json.dumps(
        {
            "root": str(args.root),
            "first": [args.first, first.status, round(first_s, 2)],
            "second": [args.second, second.status, round(second_s, 2), second.message[:200]],
            "second_plan_free_gib": round(second_plan["free_bytes"] / 2**30, 2),
            "second_plan": {k: second_plan.get(k) for k in ("expected_on_device", "handoff_on_device", "copy_inputs")},
            "peak_gib_during_second": round(peak.peak_mib / 1024, 2),
            "references_alive_after": len(plans),
        }
    )
)
reference_pool.close_all()
