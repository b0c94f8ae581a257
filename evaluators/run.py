"""CLI: `python -m evaluators.run --problem NAME_OR_FILE --candidate FILE [--device auto|cpu|cuda|cuda:N] [--json]`.

Exit 0 when the evaluation ran (whatever the verdict, `does_not_fit` included); 2 for bad usage or a broken problem;
3 when the machine failed the reference (e.g. it ran out of device memory). One line on stderr for 2 and 3.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from evaluators.judge.options import EvalOptions
    from evaluators.judge.result import EvalResult

# `--help` and bad usage answer before torch loads: the evaluator and its types are imported once the flags are read.

STATUS_STYLE = {"correct": "bold green", "incorrect": "bold red", "timeout": "bold yellow", "does_not_fit": "bold"}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line; argparse exits 2 on bad usage."""
    parser = argparse.ArgumentParser(prog="python -m evaluators.run", description=__doc__.splitlines()[0])
    parser.add_argument("--problem", required=True, help="bundled problem name or path to a KernelBench file")
    parser.add_argument("--candidate", required=True, type=Path, help="candidate source defining ModelNew")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (GPU N; both workers run there)")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line of stdout")
    parser.add_argument("--trials", type=int, default=3, help="correctness trials (at least 3)")
    parser.add_argument("--seed", type=int, default=42, help="the parameters' seed (both sides build from it)")
    parser.add_argument(
        "--trial-seed", type=int, help="the trials' seed, to redo an evaluation (default: drawn afresh, in the result)"
    )
    parser.add_argument("--timeout", type=float, help="seconds allowed for each stage (build included)")
    parser.add_argument("--no-timing", action="store_true", help="check correctness only")
    parser.add_argument("--max-speedup", type=float, default=10.0, help="flag speedups beyond this")
    parser.add_argument(
        "--compile-baseline", action="store_true", help="also time torch.compile(reference): the speedup over it"
    )
    parser.add_argument(
        "--no-cache", action="store_true", help="size the reference's shapes afresh, ignoring the sizes kept on disk"
    )
    args = parser.parse_args(argv)
    if args.trials < 3:
        parser.error("--trials must be at least 3")
    if args.timeout is not None and args.timeout <= 0:
        parser.error("--timeout must be positive")
    return args


def process_fields(args: argparse.Namespace) -> dict:
    """The flags that shape the workers' processes: the stage limits."""
    return {} if args.timeout is None else {"timeout_s": args.timeout, "build_timeout_s": args.timeout}


def options_from(args: argparse.Namespace) -> EvalOptions:
    """EvalOptions from the flags; a bad combination raises ValueError."""
    from evaluators.judge.options import EvalOptions

    fields = {"trials": args.trials, "seed": args.seed, "timing": not args.no_timing, "max_speedup": args.max_speedup}
    fields |= {"trial_seed": args.trial_seed}
    fields |= {"compile_baseline": args.compile_baseline, "reference_cache": not args.no_cache}
    return EvalOptions(**fields, **process_fields(args))


def render(result: EvalResult, console: Console) -> None:
    """The readable summary: verdict, times, flags, and diagnostics when something failed."""
    from rich.table import Table

    style = STATUS_STYLE.get(result.status, "bold magenta")
    console.print(f"[{style}]{result.status}[/] {result.problem} ({result.config or 'own globals'}, {result.device})")
    console.print(result.message, markup=False, highlight=False)
    if result.runtime_ms is not None:
        table = Table(show_header=False, box=None)
        table.add_row("candidate", f"{result.runtime_ms:.4g} ms (spread {result.spread:.1%})")
        table.add_row("reference", f"{result.baseline_ms:.4g} ms")
        table.add_row("speedup", f"{result.speedup:.3g}x  [{result.timing}]")
        if result.speedup_vs_compile:
            table.add_row("torch.compile", f"{result.compiled_ms:.4g} ms: {result.speedup_vs_compile:.3g}x over it")
        if result.roofline:
            roof = result.roofline
            fraction = f", {roof.fraction:.1%} of the {roof.bound} roofline" if roof.fraction else ""
            table.add_row("achieved", f"{roof.achieved_tflops:.3g} TFLOP/s, {roof.achieved_gbps:.4g} GB/s{fraction}")
        console.print(table)
    for shape in result.shapes if len(result.shapes) > 1 else []:
        timed = (
            f"{shape.runtime_ms:.4g} ms vs {shape.baseline_ms:.4g} ms, {shape.speedup:.3g}x" if shape.speedup else ""
        )
        console.print(f"  shape {shape.name} [{shape.kind}]: {shape.status} {timed}", markup=False, highlight=False)
    if result.compile_baseline_error:
        console.print(f"[yellow]no torch.compile baseline:[/] {result.compile_baseline_error}", highlight=False)
    for flag in result.flags:
        style = "bold red" if flag.severity == "hard" else "yellow"
        console.print(f"[{style}]{flag.severity} flag:[/] {flag.text}", markup=True, highlight=False)
    if result.set_aside:
        console.print("[bold red]set aside[/]: not eligible as best kernel until a strict re-evaluation clears it")
    if result.diagnostics and result.status != "correct":
        console.print(result.diagnostics, markup=False, highlight=False)
    stages = ", ".join(f"{name} {seconds:.2f}s" for name, seconds in result.stages.items())
    console.print(f"[dim]stages: {stages}[/]")


def main(argv: list[str] | None = None) -> int:
    """Run one evaluation; the exit status says whether it ran, not what it found."""
    args = parse_args(argv)
    from evaluators.judge import spares
    from evaluators.judge.process_options import ProcessOptions
    from evaluators.judge.toolchain import named_device, resolve_device, toolchain_key

    spares.evaluate_once()
    try:
        # Both workers import torch while the rest below loads, pydantic and EvalOptions included. A device named
        # outright starts them before the driver is asked whether it has that GPU (its first call initialises
        # it); `auto` must ask first.
        if named_device(args.device):
            spares.prestart(ProcessOptions(**process_fields(args)), toolchain_key(), args.device)
        options = options_from(args)
        device = resolve_device(args.device)
    except ValueError as exc:
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    spares.prestart(options, toolchain_key(), device)  # started already unless `auto`
    from rich.console import Console

    from evaluators.judge.evaluate import EnvironmentFailure, evaluate
    from kernels.problem_types import ProblemError

    try:
        source = args.candidate.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error: cannot read candidate {args.candidate}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    try:
        result = evaluate(args.problem, source, device, options)
    except (ProblemError, ValueError) as exc:
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    except EnvironmentFailure as exc:
        print(f"environment error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 3
    if args.json:
        print(json.dumps(result.summary_json()))
    else:
        render(result, Console())
    return 0


if __name__ == "__main__":
    sys.exit(main())
