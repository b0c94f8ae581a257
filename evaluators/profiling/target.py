"""The program a profiler runs (`python -m evaluators.profiling.target job.json`): one warm, marked call of a kernel.

Runs candidate code, so only the sandboxed subprocess of `evaluators.profiling.profile` starts it. The call is made
on the problem's first benchmark shape after two warm-up calls (compilation, autotuning), between cudaProfilerStart and
cudaProfilerStop, under the device's timing lock so no evaluation is timed while the profiler replays kernels.
A source without the candidate entry (the reference's own file) profiles the reference.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import torch

from evaluators.worker.device_lock import device_key, device_lock
from kernels.problem import load_problem
from kernels.runtime import problem_runtime

WARMUP_CALLS = 2


def main(job_path: str) -> int:
    """Profile the candidate in the working directory on the job's problem."""
    job = json.loads(Path(job_path).read_text())
    problem = load_problem(job["problem_path"])
    runtime = problem_runtime(problem, "cuda")
    runtime.use_shape(problem.benchmark_shapes("cuda")[0])
    spec = importlib.util.spec_from_file_location("ks_profiled", Path("candidate.py").resolve())
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    seed = job["seed"]
    entry = getattr(module, runtime.candidate_entry, None)
    kernel = runtime.candidate(module, seed) if entry is not None else runtime.reference(seed)
    inputs = runtime.inputs(seed, "normal")
    with device_lock(Path(job["cache_dir"]), device_key("cuda")), torch.no_grad():
        for _ in range(WARMUP_CALLS):
            kernel(*inputs)
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        kernel(*inputs)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
