"""Our timing loop against triton.testing.do_bench on the 8192^3 bf16 matmul, with SM clock and power per phase.

`python bench/probes/do_bench_clocks.py [REP_MS]` on a GPU: alternates our timer (fresh inputs and a cache flush per
repetition, as the evaluator times) with do_bench (the same inputs back to back) three times, then a 1 s do_bench
and ours once more, polling nvidia-smi every 50 ms. Written to find out why our median of a power-limited GEMM
can be several per cent below do_bench's.
"""

import argparse
import statistics
import subprocess
import sys
import threading
import time
from contextlib import nullcontext
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
import triton.testing  # noqa: E402

from evaluators.worker.timing import Clocks, TimingPlan, time_reps, warm_up  # noqa: E402
from kernels.problem import load_problem  # noqa: E402
from kernels.runtime import problem_runtime  # noqa: E402

samples = []


def poll(stop):
    q = ["nvidia-smi", "--id=0", "--query-gpu=clocks.sm,power.draw,temperature.gpu", "--format=csv,noheader,nounits"]
    while not stop.is_set():
        out = subprocess.run(q, capture_output=True, text=True).stdout.strip().split(", ")
        samples.append((time.perf_counter(), *map(float, out)))
        stop.wait(0.05)


def phase(name, fn):
    t0 = time.perf_counter()
    ms = fn()
    t1 = time.perf_counter()
    s = [x for x in samples if t0 <= x[0] <= t1]
    print(
        f"{name:10s} median {ms:.4f} ms  sm {statistics.mean(x[1] for x in s):.0f} MHz  "
        f"power {statistics.mean(x[2] for x in s):.0f} W  temp {s[-1][3]:.0f} C  ({t1 - t0:.2f} s, {len(s)} samples)",
        flush=True,
    )


def estimate_ms(call, fresh) -> float:
    """One call's milliseconds on a fresh input set, after one untimed call."""
    inputs = fresh(1)
    call(inputs)
    torch.cuda.synchronize()
    start = time.perf_counter()
    call(inputs)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e3


def ours(model, rt, clocks: Clocks, rep_ms: float) -> float:
    """Our timing routine as the parent commands it: the reference's estimate sizes warm-up and repetitions."""
    call, fresh = (lambda a: model(*a)), (lambda s: rt.inputs(s, "normal"))
    with torch.no_grad():
        estimate = estimate_ms(call, fresh)
        warm_up(call, fresh, clocks, int(min(max(25 / estimate, 1), 1000)), 2)
        reps = int(min(max(rep_ms / estimate, 20), 2000))
        plan = TimingPlan(0, reps, 7, False, 512, 4, "cuda")
        facts, _ = time_reps(call, fresh, plan, clocks, 0, lambda _: nullcontext())
    return statistics.median(facts["times_ms"])


def dob(model, args, **options) -> float:
    with torch.no_grad():
        return triton.testing.do_bench(lambda: model(*args), return_mode="median", **options)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rep_ms", nargs="?", type=float, default=200, help="our timer's milliseconds of repetitions")
    rep_ms = parser.parse_args().rep_ms
    problem = load_problem("kernels/problems/matmul_bf16.py")
    rt = problem_runtime(problem, "cuda")
    rt.use_shape(problem.shapes("cuda")[0])
    model = rt.reference(42)
    args = rt.inputs(1042, "normal")
    clocks = Clocks("cuda")
    stop = threading.Event()
    threading.Thread(target=poll, args=(stop,), daemon=True).start()
    time.sleep(1)
    for _ in range(3):
        phase("ours", lambda: ours(model, rt, clocks, rep_ms))
        phase("do_bench", lambda: dob(model, args))
    phase("do_bench1s", lambda: dob(model, args, warmup=500, rep=1000))
    phase("ours", lambda: ours(model, rt, clocks, rep_ms))
    stop.set()


if __name__ == "__main__":
    main()
