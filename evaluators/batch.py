"""`python -m evaluators.batch --suite SPEC --candidates DIR`: judge a folder of ready candidates, no LLM at all.

Candidates are matched to problems by file name: KernelBench's `level_L_problem_N_sample_S_kernel.py` (as its
eval_from_generations names them), else `<problem key>.py` (`level1/19_ReLU.py`), else `<problem name>.py`.
Verdicts go to OUT/results.jsonl as they finish; a re-run skips the problems already judged. Then OUT/suite.md
and OUT/suite.json. `--cluster` sends the evaluations to a Ray cluster, one GPU each. Exit 0 when it ran
(whatever the verdicts); 2 for bad usage, a broken problem or a cluster that cannot be joined; 130 when
interrupted (what finished is kept).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from concurrent.futures import Future, wait
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from evaluators.executors import make_executor
from evaluators.executors.local import ClusterError, Executor, cluster_arg
from evaluators.judge.options import EvalOptions
from evaluators.judge.result import EvalResult
from evaluators.suites.report import SuiteRow, machine, not_judged, row_from_result, write_suite_report
from kernels.problem_types import Problem, ProblemError
from kernels.suite import SuiteError, SuiteProblem, load_suite

RESULTS_FILE = "results.jsonl"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line; argparse exits 2 on bad usage."""
    p = argparse.ArgumentParser(prog="python -m evaluators.batch", description=__doc__.splitlines()[0])
    p.add_argument("--suite", required=True, help="kernelbench:PATH, gpumode:PATH or a folder of problems")
    p.add_argument("--candidates", required=True, type=Path, help="folder of candidate files, matched by name")
    p.add_argument("--problems", help="ids, ranges and name patterns, e.g. 1-20,23,*ReLU*")
    p.add_argument("--device", default="auto", help="auto (every GPU, one evaluation each), cpu, cuda or cuda:N")
    p.add_argument(
        "--cluster", type=cluster_arg, help="where evaluations run: local (default), ray, auto, ray://HOST:PORT"
    )
    p.add_argument("--out", type=Path, help="results folder (default runs/eval-<candidates folder name>)")
    p.add_argument("--sample", type=int, default=0, help="KernelBench sample id to take (default 0)")
    p.add_argument("--trials", type=int, default=3, help="correctness trials per candidate (at least 3)")
    p.add_argument(
        "--compile-baseline", action="store_true", help="also time torch.compile(reference); report fast_1 over it"
    )
    return p.parse_args(argv)


def candidate_file(problem: SuiteProblem, folder: Path, sample: int = 0) -> Path | None:
    """The candidate for `problem` in `folder`, by KernelBench's file naming, then by key, then by name."""
    names = []
    if problem.level is not None and problem.id is not None:
        names.append(f"level_{problem.level}_problem_{problem.id}_sample_{sample}_kernel.py")
    names += [f"{problem.key}.py", f"{problem.name}.py"]
    return next((folder / name for name in names if (folder / name).is_file()), None)


def read_results(path: Path) -> dict[str, SuiteRow]:
    """Rows already judged, by problem key; a line cut short by a kill is ignored (that problem runs again)."""
    rows = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                row = SuiteRow.model_validate(json.loads(line)["row"])
            except (ValueError, KeyError, TypeError):
                continue
            rows[row.key] = row
    return rows


class ResultLog:
    """Appends each finished evaluation to results.jsonl at once, from whichever thread finished it."""

    def __init__(self, path: Path):
        self.path = path
        self.lock = threading.Lock()

    def append(self, row: SuiteRow, result: EvalResult) -> None:
        """One line: the report row and the full evaluation."""
        line = json.dumps({"row": row.model_dump(), "result": result.model_dump(mode="json")})
        with self.lock, self.path.open("a") as log:
            log.write(line + "\n")


def judge(
    problems: dict[str, Problem],
    sources: dict[str, str],
    out: Path,
    executor: Executor,
    options: EvalOptions,
    console: Console,
) -> dict[str, SuiteRow]:
    """Evaluate every candidate not judged yet; returns the new rows (errors as not-judged rows, not kept)."""
    log = ResultLog(out / RESULTS_FILE)
    rows: dict[str, SuiteRow] = {}
    futures: dict[Future, str] = {}
    with Progress(
        SpinnerColumn(), TextColumn("judging"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
    ) as progress:
        task = progress.add_task("judging", total=len(sources))

        def finished(future: Future, key: str) -> None:
            try:
                result = future.result()
            except Exception as error:  # the reference or the machine failed, not the candidate
                # Not judged, so not kept: a re-run tries it again.
                reason = next(iter(str(error).splitlines()), "")
                rows[key] = not_judged(key, f"evaluation failed: {type(error).__name__}: {reason}")
            else:
                rows[key] = row_from_result(key, result)
                log.append(rows[key], result)
            speed = f" {rows[key].speedup:.3g}x" if rows[key].speedup is not None else ""
            aside = " (set aside)" if rows[key].set_aside else ""
            style = "green" if rows[key].status == "correct" and not aside else "red"
            progress.console.print(f"{key}: {rows[key].status}{speed}{aside}", style=style, markup=False)
            progress.advance(task)

        for key, source in sources.items():
            future = executor.submit(problems[key], source, options)
            futures[future] = key
            future.add_done_callback(lambda f, k=key: finished(f, k))
        wait(futures)
    return rows


def _lacks_compile_timing(row: SuiteRow) -> bool:
    """A correct row with neither a speedup over torch.compile nor a reason why it has none."""
    return row.status == "correct" and row.speedup_vs_compile is None and not row.compile_note


def _why_not(key: str, broken: dict[str, str], args) -> str:
    """Why a problem has no verdict: it did not load, or no candidate was found for it."""
    if key in broken:
        return f"problem could not be loaded: {broken[key]}"
    return f"no candidate file in {args.candidates}"


def main(argv: list[str] | None = None) -> int:
    """Judge the candidates of a suite and write its report; returns the exit code."""
    args = parse_args(argv)
    console = Console(highlight=False, soft_wrap=True)
    try:
        if args.trials < 3:
            raise ValueError("--trials must be at least 3")
        if not args.candidates.is_dir():
            raise ValueError(f"candidates folder not found: {args.candidates}")
        suite = load_suite(args.suite, args.problems)
        problems, broken = suite.load_all()
        executor = make_executor(args.cluster, args.device)
    except (SuiteError, ProblemError, ValueError, ClusterError) as error:
        print(f"error: {str(error).splitlines()[0]}", file=sys.stderr)
        return 2
    out = args.out or Path("runs") / f"eval-{args.candidates.resolve().name}"
    out.mkdir(parents=True, exist_ok=True)
    done = read_results(out / RESULTS_FILE)
    if args.compile_baseline:  # verdicts reached without the baseline are judged again, with it
        done = {key: row for key, row in done.items() if not _lacks_compile_timing(row)}
    files = {entry.key: candidate_file(entry, args.candidates, args.sample) for entry in suite.problems}
    sources = {
        key: path.read_text() for key, path in files.items() if path is not None and key not in done | broken.keys()
    }
    for key, reason in broken.items():
        console.print(f"{key}: problem could not be loaded: {reason}", style="red", markup=False)
    console.print(
        f"{len(suite.problems)} problems from {args.suite}: {len(done)} already judged, {len(sources)} to judge, "
        f"{sum(path is None for path in files.values())} without a candidate -> {out}"
    )
    where = executor.describe()
    try:
        options = EvalOptions(trials=args.trials, compile_baseline=args.compile_baseline)
        new = judge(problems, sources, out, executor, options, console)
    except KeyboardInterrupt:
        console.print(f"interrupted; finished verdicts are in {out / RESULTS_FILE}; run again to continue")
        return 130
    finally:
        executor.close()
    rows = [
        done.get(e.key) or new.get(e.key) or not_judged(e.key, _why_not(e.key, broken, args)) for e in suite.problems
    ]
    title = f"Evaluate-only batch: {args.candidates.resolve().name} on {args.suite}"
    info = machine(where)
    path = write_suite_report(
        out, rows, suite=args.suite, machine_info=info, title=title, compile_baseline=args.compile_baseline
    )
    console.print(f"report: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
