"""`python -m graph.run`: run the scientist on a problem, live, and leave the best kernel and a report behind.

With no arguments it runs the bundled default problem (fused_residual_norm) end to end: Gemini when
GOOGLE_API_KEY is set, else a replay of the bundled, hand-authored demo cassette. Exit codes: 0 done,
2 bad usage (found before any work: an unknown or uninstalled model provider, a cassette shorter than the run, an
unreachable --cluster), 3 a fatal LLM error (authentication, bad request, cassette miss; the run can be resumed),
4 the machinery lost an evaluation (the cluster past its retries, or a reference worker died; resume when it is
back), 130 interrupted by Ctrl-C or SIGTERM (what finished is saved; resume with --resume RUN_ID).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, fields
from pathlib import Path

# Only light modules here: `--help` and bad usage must answer before torch, LangGraph or LangChain load.
from agents.targets import UnknownTarget, get_target, known
from graph import preflight, stopping
from graph.context import DEFAULT_MODEL, DEFAULT_PROBLEM, RunContext
from kernels.speedup import format_speedup

DEMO_CASSETTE = Path(__file__).parents[1] / "agents" / "cassettes" / "demo_fused_residual_norm.json"
SETTINGS_FILE = "run.json"
# Flags that may change when a run is resumed (to give it more budget); the rest are the run's identity.
RESUMABLE = ("iterations", "max_tokens", "max_dollars", "max_minutes", "cluster", "max_concurrency")


class OneLineParser(argparse.ArgumentParser):
    """Reports bad usage as one line on stderr and exits 2."""

    def error(self, message: str):
        """Print `prog: error: message` and exit 2."""
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def parser() -> argparse.ArgumentParser:
    """The CLI's flags; defaults of None mean "not given", so a resumed run keeps its own settings."""
    p = OneLineParser(prog="python -m graph.run", description=__doc__.splitlines()[0])
    p.add_argument("--problem", help=f"bundled problem name or problem file (default {DEFAULT_PROBLEM})")
    p.add_argument("--model", help=f"provider:model or replay:CASSETTE (default {DEFAULT_MODEL}, or the demo)")
    p.add_argument("--model-for", action="append", default=[], metavar="ROLE=SPEC", help="per-role model")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), help="default auto: a GPU if present")
    p.add_argument(
        "--target", type=target_arg, help=f"architecture the kernels are for ({known()}; default: the device)"
    )
    p.add_argument(
        "--cluster", type=cluster_flag, help="where evaluations run: local (default), ray, auto, ray://HOST:PORT"
    )
    p.add_argument("--strategy", choices=("scientist", "sampling", "tree"), help="search strategy (default scientist)")
    p.add_argument("--iterations", type=positive_int, help="default 3")
    p.add_argument("--avenues", type=positive_int, help="broad avenues the designer names per iteration (default 10)")
    p.add_argument("--plans", type=positive_int, help="concrete plans it writes on them (default 5)")
    p.add_argument("--experiments-per-iteration", type=positive_int, help="plans kept and implemented (default 3)")
    p.add_argument("--max-concurrency", type=positive_int, help="experiments evaluated at once (default 2)")
    p.add_argument("--max-debug-attempts", type=natural_int, help="debugger rounds per candidate (default 2)")
    p.add_argument("--max-tokens", type=positive_int, help="token budget")
    p.add_argument("--max-dollars", type=positive_float, help="LLM cost budget in USD")
    p.add_argument("--max-minutes", type=positive_float, help="wall-time budget")
    p.add_argument("--out", type=Path, help="run directory (default runs/<run_id>)")
    p.add_argument("--resume", metavar="RUN_ID", help="continue an interrupted run from its checkpoints")
    p.add_argument("--record-cassette", type=Path, metavar="PATH", help="record every LLM call to a cassette")
    p.add_argument("--retrieval", choices=("hybrid", "lexical"), help="literature search mode (default hybrid)")
    p.add_argument(
        "--speed-of-light", type=fraction, help="stop once the best reaches this fraction of roofline (default 0.95)"
    )
    p.add_argument("--tree-epsilon", type=fraction, help="the tree strategy's exploration rate (default 0.2)")
    p.add_argument(
        "--compile-baseline",
        action="store_const",
        const=True,
        help="also time torch.compile(reference); the report gives the best kernel's speedup over it",
    )
    p.add_argument(
        "--no-profile", dest="profile", action="store_const", const=False, help="skip ncu / rocprofv3 on each base"
    )
    return p


def target_arg(text: str) -> str:
    """An argparse type: a known target's name."""
    try:
        return get_target(text).name
    except UnknownTarget as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def cluster_flag(text: str) -> str:
    """An argparse type: a --cluster value (the executors load only once a value is given)."""
    from evaluators.executors.local import cluster_arg

    return cluster_arg(text)


def positive_int(text: str) -> int:
    """An argparse type: an integer > 0."""
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def natural_int(text: str) -> int:
    """An argparse type: an integer >= 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def positive_float(text: str) -> float:
    """An argparse type: a number > 0."""
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def fraction(text: str) -> float:
    """An argparse type: a number in (0, 1]."""
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {text}")
    return value


def new_settings(args: argparse.Namespace, p: argparse.ArgumentParser) -> tuple[RunContext, int, str | None]:
    """The context of a new run from its flags, its concurrency, and a banner when replaying the demo."""
    from agents.errors import FatalLLMError
    from agents.models import ModelSettings, parse_role_overrides, refuse_recording
    from kernels.problem import load_problem
    from kernels.problem_types import ProblemError

    try:
        problem = load_problem(args.problem or DEFAULT_PROBLEM)
    except ProblemError as error:
        p.error(str(error))
    banner = None
    model = args.model
    if model is None and os.environ.get("GOOGLE_API_KEY"):
        model = DEFAULT_MODEL
    elif model is None:
        model = f"replay:{DEMO_CASSETTE}"
        banner = (
            f"No GOOGLE_API_KEY: replaying the bundled demo cassette {DEMO_CASSETTE.name}. Its LLM answers were "
            "authored by hand, not produced by a live model; every kernel in it is really compiled, checked and timed."
        )
    check_model_spec(model, p)
    try:
        role_models = parse_role_overrides(args.model_for)
    except FatalLLMError as error:
        p.error(f"--model-for: {error}")
    for spec in role_models.values():
        check_model_spec(spec, p)
    replayed = ModelSettings(default=model, per_role=role_models).replayed_roles()
    if args.record_cassette and replayed:
        p.error(refuse_recording(replayed))
    given = {key: value for key, value in vars(args).items() if value is not None}
    names = {f.name for f in fields(RunContext)}
    ctx = RunContext(
        **{key: given[key] for key in names & given.keys() if key not in ("problem", "model", "record_cassette")},
        problem=args.problem or DEFAULT_PROBLEM,
        model=model,
        role_models=role_models,
        record_cassette=str(args.record_cassette or ""),
    )
    if ctx.experiments_per_iteration > ctx.plans and ctx.strategy != "sampling":
        p.error(f"--experiments-per-iteration {ctx.experiments_per_iteration} exceeds --plans {ctx.plans}")
    if problem.name != DEFAULT_PROBLEM and model == f"replay:{DEMO_CASSETTE}":
        p.error(f"the demo cassette is for {DEFAULT_PROBLEM}; pass --model for {problem.name}")
    return ctx, args.max_concurrency or 2, banner


def check_model_spec(spec: str, p: argparse.ArgumentParser) -> None:
    """A model spec is provider:model of a known, installed provider, or replay: with a readable cassette."""
    problem = preflight.model_problem(spec)
    if problem:
        p.error(problem)


def check_coverage(ctx: RunContext, p: argparse.ArgumentParser) -> None:
    """Refuse, before any work, a run longer than the cassettes it replays."""
    problem = preflight.cassette_shortfall(ctx)
    if problem:
        p.error(problem)


def refuse_writable(p: argparse.ArgumentParser, run_dir: Path) -> None:
    """Exit 2 where candidates could write the run's folder: its archive and checkpoints are read back as written."""
    from evaluators.judge.process_options import default_cache_dir
    from evaluators.judge.readonly_code import refused_results_folder

    if refusal := refused_results_folder(run_dir, default_cache_dir()):
        p.error(refusal)


def resumed_settings(args: argparse.Namespace, p: argparse.ArgumentParser, run_dir: Path) -> tuple[RunContext, int]:
    """The saved settings of the run being resumed, with any budget flags given now."""
    path = run_dir / SETTINGS_FILE
    if not path.is_file():
        p.error(f"no run to resume at {run_dir} (missing {SETTINGS_FILE})")
    saved = json.loads(path.read_text())
    context = saved["context"]
    context.update({key: getattr(args, key) for key in RESUMABLE[:-1] if getattr(args, key) is not None})
    return RunContext(**context), args.max_concurrency or saved["max_concurrency"]


def main(argv: list[str] | None = None) -> int:
    """Run or resume a scientist run; returns the process exit code."""
    p = parser()
    args = p.parse_args(argv)
    from rich.console import Console

    from graph import lab

    console = Console(highlight=False, soft_wrap=True)
    with stopping.on_signals():  # also while the executors close: a second signal there exits at once
        try:
            return run_with_executors(args, p, console)
        finally:
            lab.close_executors()


def run_with_executors(args: argparse.Namespace, p: argparse.ArgumentParser, console) -> int:
    """Run or resume, with every argument checked and the cluster (if any) joined before any LLM call is made."""
    from agents.errors import FatalLLMError
    from agents.models import describe_models
    from evaluators.executors.local import ClusterError, InfrastructureError
    from evaluators.judge.evaluate import EnvironmentFailure
    from graph import lab
    from graph.builder import build_graph
    from graph.checkpoint import open_checkpointer
    from graph.routing import recursion_limit

    if args.resume:
        run_id = args.resume
        run_dir = args.out or lab.RUNS_DIR / run_id
        refuse_writable(p, run_dir)
        ctx, concurrency = resumed_settings(args, p, run_dir)
    else:
        ctx, concurrency, banner = new_settings(args, p)
    check_coverage(ctx, p)
    try:
        where = lab.executor(ctx, lab.run_device(ctx)).describe()
    except (ClusterError, ValueError) as error:
        p.error(str(error))
    if not args.resume:
        run_dir = args.out or lab.RUNS_DIR / lab.new_run_id(ctx.problem)
        refuse_writable(p, run_dir)
        run_id = run_dir.name
        if (run_dir / SETTINGS_FILE).exists():
            p.error(f"{run_dir} already holds a run; continue it with --resume {run_id} --out {run_dir}")
        if banner:
            console.print(banner, style="bold yellow")
        ctx.run_dir = str(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        settings = {"run_id": run_id, "context": asdict(ctx), "max_concurrency": concurrency}
        (run_dir / SETTINGS_FILE).write_text(json.dumps(settings, indent=2) + "\n")
    config = {
        "configurable": {"thread_id": run_id},
        # LangGraph's stream waiter holds one thread of the same pool: without it, --max-concurrency 1 deadlocks.
        "max_concurrency": concurrency + 1,
        "recursion_limit": recursion_limit(ctx.iterations, ctx.experiments_per_iteration, ctx.max_debug_attempts),
    }
    kept = f"the archive and checkpoints are kept in {run_dir}; resume with --resume {run_id}"
    with open_checkpointer(run_dir) as checkpointer:
        graph = build_graph(checkpointer)
        snapshot = graph.get_state(config)
        # `next` leaves out tasks that finished before a stop; only a run with no task left at all is done.
        if args.resume and snapshot.values and not snapshot.tasks:
            console.print(f"run {run_id} already finished; report at {snapshot.values.get('report_path')}")
            return 0
        models = describe_models(ctx.model, ctx.role_models)  # a role's cassette, never only the default model
        console.print(
            f"run {run_id}: {ctx.problem}, strategy {ctx.strategy}, with {models} -> {run_dir}; evaluations on {where}"
        )
        try:
            final = stream(graph, None if args.resume else {}, config, ctx, console)
        except FatalLLMError as error:
            print(f"error: {error}", file=sys.stderr)
            console.print(kept)
            return 3
        except (InfrastructureError, EnvironmentFailure) as error:
            print(f"error: {str(error).splitlines()[0]}", file=sys.stderr)
            console.print(kept)
            return 4
        except stopping.Stopped:
            console.print(f"interrupted; resume with: python -m graph.run --resume {run_id}" + _out_flag(args, run_dir))
            return 130
    best = final.get("best_speedup")
    headline = f"{final.get('best_id')} at {format_speedup(best)}" if best is not None else "no correct candidate"
    console.print(f"done ({final.get('stop_reason')}): best {headline}; report {final.get('report_path')}")
    return 0


def _out_flag(args: argparse.Namespace, run_dir: Path) -> str:
    """The --out a resume needs when the run lives outside runs/."""
    return f" --out {run_dir}" if args.out else ""


def stream(graph, graph_input: dict | None, config: dict, ctx: RunContext, console) -> dict:
    """Run the graph with live progress; returns the final state."""
    from graph.progress import Progress

    with Progress(console, ctx.iterations) as progress:
        for namespace, mode, chunk in graph.stream(
            # "sync": a step's checkpoint is on disk before the next step starts, so a crash loses no finished work.
            graph_input,
            config,
            context=ctx,
            stream_mode=["updates", "custom"],
            subgraphs=True,
            durability="sync",
        ):
            progress.handle(namespace, mode, chunk)
            stopping.check()  # between updates: no library code is running in this thread
    return graph.get_state(config).values


if __name__ == "__main__":
    sys.exit(main())
