"""Profiler evidence on a kernel: Nsight Compute on NVIDIA, rocprofv3 on AMD, once per source, cached by its hash.

The profiled program (`evaluators.profiling.target`) runs one warm call of the candidate on the problem's first
benchmark shape inside a sandboxed subprocess: its own scratch directory and process group, the evaluator's
scrubbed environment (`worker_env`), a timeout. The commands, written down here and nowhere else:

    ncu --target-processes all --profile-from-start off --metrics <NCU_METRICS> --export REPORT --force-overwrite \
        python -s -m evaluators.profiling.target job.json
    ncu --import REPORT.ncu-rep --csv --page raw --print-units base          (the CSV evaluators.profiling.report reads)

On AMD (UNTESTED until it runs on an MI300):

    rocprofv3 --kernel-trace --pmc <ROCPROF_COUNTERS> --output-format csv -d OUT -o run -- python -s -m ...

`profile_summary(problem, source, device)` returns the summary text for the prompts, or one line saying why there
is none (CPU, no profiler installed, the profiler failed); it never raises for the candidate's sake.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from evaluators.judge import problem_files
from evaluators.judge.environment import worker_env
from evaluators.judge.options import EvalOptions
from evaluators.judge.process import confined
from evaluators.judge.reference_pool import EnvironmentFailure
from evaluators.judge.toolchain import toolchain_key
from evaluators.profiling.report import parse_ncu_csv, parse_rocprof_csv, summarize
from kernels.bundle import pack_problem
from kernels.problem_types import Problem

NCU_METRICS = (
    "gpu__time_duration.sum",
    "dram__bytes_read.sum.per_second",
    "dram__bytes_write.sum.per_second",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    "launch__registers_per_thread",
    "lts__t_sector_hit_rate.pct",
    *(
        f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"
        for reason in (
            "long_scoreboard", "short_scoreboard", "wait", "mio_throttle", "lg_throttle", "math_pipe_throttle",
            "barrier", "membar", "not_selected", "no_instruction", "dispatch_stall", "drain",
        )
    ),
)  # fmt: skip
ROCPROF_COUNTERS = ("FETCH_SIZE", "WRITE_SIZE", "TCC_HIT_sum", "TCC_MISS_sum")
TARGET = [sys.executable, "-s", "-m", "evaluators.profiling.target", "job.json"]
TIMEOUT_S = 600.0
ERROR_CHARS = 200


def ncu_profile_command(report: Path) -> list[str]:
    """Profile the target's one marked call into REPORT.ncu-rep (kernel replay, only the metrics we read)."""
    return [
        "ncu", "--target-processes", "all", "--profile-from-start", "off", "--metrics", ",".join(NCU_METRICS),
        "--export", str(report), "--force-overwrite", *TARGET,
    ]  # fmt: skip


def ncu_csv_command(report: Path) -> list[str]:
    """Export a saved report as the raw-page CSV the parser reads."""
    return ["ncu", "--import", f"{report}.ncu-rep", "--csv", "--page", "raw", "--print-units", "base"]


def rocprof_command(out_dir: Path) -> list[str]:
    """Profile the target with rocprofv3 into CSVs under OUT (UNTESTED until it runs on an MI300)."""
    return [
        "rocprofv3", "--kernel-trace", "--pmc", *ROCPROF_COUNTERS, "--output-format", "csv",
        "-d", str(out_dir), "-o", "run", "--", *TARGET,
    ]  # fmt: skip


def profiler_for(device: str) -> str | None:
    """The profiler to use, ncu or rocprofv3, when the device is a GPU and its vendor's tool is on PATH; else None."""
    if device == "cpu":
        return None
    import torch

    tool = "rocprofv3" if torch.version.hip else "ncu"
    return tool if shutil.which(tool) else None


def _run(command: list[str], scratch: Path, env: dict, timeout_s: float) -> subprocess.CompletedProcess:
    """Run one command in the scratch directory, in its own process group, killed whole on timeout."""
    process = subprocess.Popen(
        command, cwd=scratch, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise
    return subprocess.CompletedProcess(command, process.returncode, out, "")


def _failure(tool: str, done: subprocess.CompletedProcess) -> str:
    output = done.stdout.splitlines()
    lines = [line for line in output if "ERROR" in line or "Error" in line] or output
    return f"{tool} failed (exit {done.returncode}): {(lines or [''])[-1].strip()[:ERROR_CHARS]}"


def run_profiler(problem: Problem, source: str, device: str, tool: str, timeout_s: float = TIMEOUT_S) -> str:
    """Profile one warm call of `source` with `tool` in a sandboxed subprocess; the summary or why there is none.

    The profiled candidate runs as the user too: a change it makes to the problem's files is put back after it.
    """
    try:
        watched = problem_files.watch(problem, pack_problem(problem))
    except EnvironmentFailure as failure:
        return f"No profile: {failure}"
    try:
        summary = _profiled(problem, source, device, tool, timeout_s)
    finally:
        changed = problem_files.release(watched)
    return f"No profile: {changed[0][1]}" if changed else summary


def _profiled(problem: Problem, source: str, device: str, tool: str, timeout_s: float) -> str:
    options = EvalOptions()
    scratch = Path(tempfile.mkdtemp(prefix="ks-profile-"))
    try:
        job = {"problem_path": str(problem.path), "cache_dir": str(options.cache_dir), "seed": options.seed}
        (scratch / "job.json").write_text(json.dumps(job))
        (scratch / "candidate.py").write_text(source)
        env = worker_env(device, scratch, options, toolchain_key(), "candidate")
        if tool == "ncu":
            # The candidate runs under the profiler: confined as a candidate's worker is (judge/process.py).
            done = _run(confined(ncu_profile_command(scratch / "report"), options, scratch), scratch, env, timeout_s)
            if done.returncode != 0:
                return _failure(tool, done)
            exported = _run(ncu_csv_command(scratch / "report"), scratch, env, timeout_s)
            if exported.returncode != 0:
                return _failure("ncu --import", exported)
            kernels = parse_ncu_csv(exported.stdout)
        else:
            done = _run(confined(rocprof_command(scratch / "out"), options, scratch), scratch, env, timeout_s)
            if done.returncode != 0:
                return _failure(tool, done)
            counters = "".join(p.read_text() for p in (scratch / "out").rglob("*counter_collection.csv"))
            trace = "".join(p.read_text() for p in (scratch / "out").rglob("*kernel_trace.csv"))
            kernels = parse_rocprof_csv(counters, trace)
        return summarize(kernels, tool)
    except subprocess.TimeoutExpired:
        return f"{tool} did not finish in {timeout_s:g} s; no profile"
    except (ValueError, KeyError) as error:
        return f"{tool}'s report could not be read: {error}"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def profile_summary(problem: Problem, source: str, device: str, cache_dir: Path | None = None) -> str:
    """The base's profile for the prompts, profiled once per (problem, source, device kind, toolchain) and cached."""
    tool = profiler_for(device)
    if tool is None:
        why = "the run is on the CPU" if device == "cpu" else "neither ncu nor rocprofv3 is on PATH"
        return f"No profiler evidence: {why}. Reason from the roofline fraction and the findings instead."
    key = hashlib.sha256("|".join((problem.digest, source, tool, toolchain_key())).encode()).hexdigest()[:20]
    cache = (cache_dir or EvalOptions().cache_dir) / "profiles" / f"{key}.txt"
    if cache.is_file():
        return cache.read_text()
    summary = run_profiler(problem, source, device, tool)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(summary)
    return summary
