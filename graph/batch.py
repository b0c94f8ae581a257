"""`python -m graph.batch --suite SPEC`: run the scientist on every problem of a suite, then write the suite report.

Each problem is an ordinary `python -m graph.run` run in its own process and directory (OUT/runs/<key>), one per
GPU at a time (on the CPU, one at a time). With `--cluster`, the batch joins (or starts) the Ray cluster first,
every run sends its evaluations there, and as many runs go at once as the cluster has GPUs (`--parallel`).
A re-run skips finished problems and resumes interrupted ones from their checkpoints; an interrupt (Ctrl-C or
SIGTERM) is passed on to the running runs, which save what has finished. `--max-dollars` caps the
whole batch: once the runs have spent it, no new problem starts (each run is also told the budget left when it
starts). Exit 0 when the batch ran, 2 for bad usage, a broken problem or a cluster that cannot be joined, 130
when interrupted (every run keeps its checkpoints).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

# Only light modules here, as in graph.run: `--help` and bad usage must answer before LangChain, pydantic models,
# rich or the evaluators load; the rest is imported where it is used.
from graph import stopping
from graph.context import DEFAULT_MODEL
from graph.run import (
    OneLineParser,
    check_model_spec,
    cluster_flag,
    natural_int,
    positive_float,
    positive_int,
    refuse_writable,
)
from graph.suite_runs import Spend, is_finished, is_started, read_spend, run_dir_name, suite_row
from kernels.speedup import format_speedup

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from evaluators.executors.local import Executor
    from kernels.suite import SuiteProblem

CLUSTER_SLOT = "ray"  # a run slot whose evaluations go to the cluster, not to a GPU of this host
POLL_S = 0.5
SPEND_EVERY_S = 2.0  # how often running runs' checkpoints are read for the live table and the dollar cap


@dataclass
class Job:
    """One problem of the batch: where its run lives and what became of it in this invocation."""

    entry: SuiteProblem
    run_dir: Path
    state: str = "queued"  # queued | running | finished | interrupted | failed | not started
    slot: str | None = None
    process: subprocess.Popen | None = None
    started: float = 0.0
    spend: Spend = field(default_factory=Spend)
    reason: str = ""


def parser() -> OneLineParser:
    """The CLI's flags."""
    p = OneLineParser(prog="python -m graph.batch", description=__doc__.splitlines()[0])
    p.add_argument("--suite", required=True, help="kernelbench:PATH[/KernelBench/levelN], gpumode:PATH or a folder")
    p.add_argument("--problems", help="ids, ranges and name patterns, e.g. 1-20,23,*ReLU*")
    p.add_argument("--model", help=f"provider:model or replay:CASSETTE (default {DEFAULT_MODEL})")
    p.add_argument("--budget", type=positive_int, default=3, help="iterations per problem (default 3)")
    p.add_argument("--max-dollars", type=positive_float, help="LLM cost cap for the whole batch (USD)")
    p.add_argument("--experiments-per-iteration", type=positive_int, help="default 2")
    p.add_argument("--max-debug-attempts", type=natural_int, help="debugger rounds per candidate (default 2)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="auto: every GPU, else cpu")
    p.add_argument("--retrieval", choices=("hybrid", "lexical"), help="literature search mode (default hybrid)")
    p.add_argument("--avenues", type=positive_int, help="broad avenues the designer names per iteration (default 10)")
    p.add_argument("--plans", type=positive_int, help="concrete plans it writes on them (default 5)")
    p.add_argument(
        "--compile-baseline", action="store_true", help="also time torch.compile(reference); report fast_1 over it"
    )
    p.add_argument(
        "--cluster",
        type=cluster_flag,
        help="where the runs' evaluations go: local (default), ray, auto, ray://HOST:PORT",
    )
    p.add_argument("--parallel", type=positive_int, help="runs at once (default: one per GPU, local or the cluster's)")
    p.add_argument("--out", type=Path, help="batch folder (default runs/batch-<suite folder name>)")
    return p


@dataclass
class Cluster:
    """The cluster the batch joined: held open for the batch (a Ray it started lives as long), and how runs join."""

    executor: Executor
    flag: str  # the runs' --cluster: the user's ray://HOST:PORT, else "auto" with RAY_ADDRESS set
    address: str | None  # RAY_ADDRESS for the runs

    @property
    def gpus(self) -> int:
        import ray

        return int(ray.cluster_resources().get("GPU", 0))


def join_cluster(spec: str, device: str) -> Cluster:
    """Join (or start) the cluster now, before any run spends an LLM call; ClusterError when it cannot be used."""
    from evaluators.executors import make_executor

    executor = make_executor(spec, device)
    if spec.startswith("ray://"):
        return Cluster(executor, spec, None)
    import ray

    return Cluster(executor, "auto", ray.get_runtime_context().gcs_address)


def slots(device: str) -> list[str]:
    """Where runs go: one slot per GPU ("0", "1", ...), or the one CPU slot."""
    if device == "cpu":
        return ["cpu"]
    from evaluators.worker.devices import visible_gpus

    if visible_gpus():
        return [str(gpu.index) for gpu in visible_gpus()]
    if device == "cuda":
        raise ValueError("--device cuda asked for, but no CUDA GPU is visible")
    return ["cpu"]


def run_command(job: Job, args, slot: str, dollars_left: float | None, cluster: Cluster | None = None) -> list[str]:
    """graph.run's command line: resume a started run, else start it with the batch's settings."""
    command = [sys.executable, "-m", "graph.run", "--out", str(job.run_dir)]
    budget = ["--max-dollars", f"{job.spend.dollars + dollars_left:.6f}"] if dollars_left is not None else []
    budget += ["--cluster", cluster.flag] if cluster else []
    if is_started(job.run_dir):
        return [*command, "--resume", job.run_dir.name, "--iterations", str(args.budget), *budget]
    command += ["--problem", str(job.entry.path), "--model", args.model, "--iterations", str(args.budget)]
    device = {"cpu": "cpu", CLUSTER_SLOT: args.device}.get(slot, "cuda")
    command += ["--device", device, *budget]
    for flag in ("experiments_per_iteration", "max_debug_attempts", "retrieval", "avenues", "plans"):
        if getattr(args, flag) is not None:
            command += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    return command + (["--compile-baseline"] if args.compile_baseline else [])


def start(job: Job, args, slot: str, dollars_left: float | None, cluster: Cluster | None = None) -> None:
    """Start the problem's run in its own process, pinned to its GPU, its output in the run's batch.log."""
    from evaluators.judge.environment import REPO_ROOT, visible_device_env

    job.run_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    paths = [str(REPO_ROOT), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    if slot.isdigit():
        env |= visible_device_env(int(slot))
    if cluster and cluster.address:
        env["RAY_ADDRESS"] = cluster.address
    log = (job.run_dir / "batch.log").open("a")
    command = run_command(job, args, slot, dollars_left, cluster)
    # A session of its own: a Ctrl-C at the terminal reaches the batch alone, which passes it on once (stop_runs).
    job.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    log.close()
    job.state, job.slot, job.started = "running", slot, time.monotonic()


def finish(job: Job) -> None:
    """Record how the run's process ended."""
    code = job.process.returncode
    job.spend = read_spend(job.run_dir, job.spend)
    if code == 0 and is_finished(job.run_dir):
        job.state = "finished"
    elif code in (3, 130) or (code != 2 and is_started(job.run_dir)):
        job.state, job.reason = "interrupted", f"run stopped (exit {code}); resumes on a re-run: {last_line(job)}"
    else:
        job.state, job.reason = "failed", f"run failed (exit {code}): {last_line(job)}"
    job.process = None


def last_line(job: Job) -> str:
    """The last line the run wrote, for the reason a problem was not judged."""
    log = job.run_dir / "batch.log"
    lines = log.read_text(errors="replace").strip().splitlines() if log.is_file() else []
    return lines[-1][:200] if lines else ""


def table(jobs: list[Job], cap: float | None) -> Table:
    """The live view: one row per problem."""
    from rich.table import Table

    spent = sum(job.spend.dollars for job in jobs)
    title = f"spent ${spent:.4f}" + (f" of ${cap:.2f}" if cap else "")
    view = Table(title=title, title_justify="left")
    for column in ("problem", "state", "device", "iteration", "best", "tokens", "$", "time"):
        view.add_column(column)
    for job in jobs:
        best = format_speedup(job.spend.best)
        device = {None: "-", "cpu": "cpu", CLUSTER_SLOT: "cluster"}.get(job.slot, f"cuda:{job.slot}")
        elapsed = f"{time.monotonic() - job.started:.0f}s" if job.state == "running" else ""
        style = {"finished": "green", "running": "bold", "failed": "red", "interrupted": "yellow"}.get(job.state)
        cells = [job.entry.key, job.state, device, str(job.spend.iteration), best, str(job.spend.tokens)]
        view.add_row(*cells, f"{job.spend.dollars:.4f}", elapsed, style=style)
    return view


def schedule(jobs: list[Job], args, free: list[str], console: Console, cluster: Cluster | None = None) -> None:
    """Start queued runs on free slots until all are done; the dollar cap stops new starts."""
    from rich.live import Live

    last_read = 0.0
    with Live(table(jobs, args.max_dollars), console=console, refresh_per_second=2) as live:
        while any(job.state in ("queued", "running") for job in jobs):
            stopping.check()
            for job in jobs:
                if job.state == "running" and job.process.poll() is not None:
                    free.append(job.slot)
                    finish(job)
            if time.monotonic() - last_read > SPEND_EVERY_S:
                for job in jobs:
                    if job.state == "running":
                        job.spend = read_spend(job.run_dir, job.spend)
                last_read = time.monotonic()
            spent = sum(job.spend.dollars for job in jobs)
            for job in jobs:
                if job.state != "queued" or not free:
                    continue
                if args.max_dollars is not None and spent >= args.max_dollars:
                    job.state, job.reason = "not started", f"batch dollar cap ${args.max_dollars:.2f} reached"
                    continue
                left = args.max_dollars - spent if args.max_dollars is not None else None
                start(job, args, free.pop(0), left, cluster)
            live.update(table(jobs, args.max_dollars))
            time.sleep(POLL_S)


def stop_runs(jobs: list[Job]) -> None:
    """Interrupt the running runs as Ctrl-C would: each saves what has finished and exits 130; wait for them."""
    for job in jobs:
        if job.process is not None and job.process.poll() is None:
            job.process.send_signal(signal.SIGINT)
    for job in jobs:
        if job.process is not None:
            job.process.wait()
            finish(job)


def main(argv: list[str] | None = None) -> int:
    """Run the suite; returns the exit code."""
    p = parser()
    args = p.parse_args(argv)
    from rich.console import Console

    from evaluators.executors.local import ClusterError
    from evaluators.suites.report import machine, write_suite_report
    from kernels.problem_types import ProblemError
    from kernels.suite import SuiteError, load_suite

    console = Console(highlight=False, soft_wrap=True)
    if args.model is None:
        if not os.environ.get("GOOGLE_API_KEY"):
            p.error("no model: set GOOGLE_API_KEY for the default Gemini model, or pass --model")
        args.model = DEFAULT_MODEL
    check_model_spec(args.model, p)
    if args.model.startswith("replay:"):
        args.model = f"replay:{Path(args.model.removeprefix('replay:')).resolve()}"  # runs start in their own folder
    try:
        suite = load_suite(args.suite, args.problems)
        refuse_writable(p, args.out or Path("runs") / f"batch-{suite.root.name}")  # each run's folder lies inside it
        _, broken = suite.load_all()
        cluster = join_cluster(args.cluster, args.device) if args.cluster not in (None, "local") else None
        free = slots(args.device) if cluster is None else [CLUSTER_SLOT] * max(1, cluster.gpus)
    except (SuiteError, ProblemError, ValueError, ClusterError) as error:
        p.error(str(error).splitlines()[0])
    if args.parallel:
        free = (free * args.parallel)[: args.parallel]
    out = args.out or Path("runs") / f"batch-{suite.root.name}"
    jobs = [Job(entry, out / "runs" / run_dir_name(entry.key)) for entry in suite.problems]
    for job in jobs:
        job.spend = read_spend(job.run_dir) if job.run_dir.is_dir() else Spend()
        if is_finished(job.run_dir):
            job.state = "finished"
        elif job.entry.key in broken:
            job.state, job.reason = "failed", f"problem could not be loaded: {broken[job.entry.key]}"
            console.print(f"{job.entry.key}: {job.reason}", style="red", markup=False)
    resumed = sum(job.state == "queued" and is_started(job.run_dir) for job in jobs)
    console.print(
        f"{len(jobs)} problems from {args.suite} on {len(free)} slot(s): "
        f"{sum(job.state == 'finished' for job in jobs)} finished before, {resumed} to resume -> {out}"
    )
    executor = f"local: {len(free)} slot(s) ({', '.join(free)}), one problem each"
    if cluster:
        executor = f"{len(free)} run(s) at once, evaluations on {cluster.executor.describe()}"
    code = 0
    try:
        with stopping.on_signals():  # a second signal, while the runs save their work, stops the batch at once
            try:
                schedule(jobs, args, free, console, cluster)
            except stopping.Stopped:
                stop_runs(jobs)
                console.print("interrupted; run the same command again to continue")
                code = 130
    finally:
        if cluster:
            cluster.executor.close()
    console.line()
    rows = [suite_row(job.entry.key, job.run_dir, job.reason or f"not run ({job.state})") for job in jobs]
    title = f"Scientist batch on {args.suite}"
    path = write_suite_report(
        out, rows, suite=args.suite, machine_info=machine(executor), title=title, compile_baseline=args.compile_baseline
    )
    console.print(f"report: {path}")
    return code


if __name__ == "__main__":
    sys.exit(main())
