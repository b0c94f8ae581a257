"""`python -m evaluators.batch --suite SPEC --candidates DIR`: judge a folder of ready candidates, no LLM at all.

Candidates are matched to problems by file name: KernelBench's `level_L_problem_N_sample_S_kernel.py` (as its
eval_from_generations names them), else `<problem key>.py` (`level1/19_ReLU.py`), else `<problem name>.py`. Verdicts go
to OUT/results.jsonl as they finish; a re-run skips the problems already judged. Then OUT/suite.md and OUT/suite.json. A
correct candidate set aside only by flags a strict re-evaluation may clear (beyond_plausible, side_stream, unwatched,
problem_changed) gets one, submitted through the same executor the moment its first result is in, and so
does every correct candidate with a significant gain, or a significant slowdown within reach of two processes (unless a
hard flag other than no_custom_kernel set it aside), to confirm it in other processes. Where the strict run holds, the
two count together (the slower one's figures, bands spanning both: evaluators/judge/strict.py); otherwise the candidate
is set aside, and a strict run that did not fit on the device is retried by a re-run. Its first evaluation is kept at
once, so a re-run runs only the strict one; the line that follows keeps both. A gain the two runs still show, or a
slowdown within reach of two processes, is weighed against a control, the problem's reference judged strictly as its own
candidate, whose spread widens the row's bands (evaluators/judge/strict.py); kept the same way, a lost control is run
again by a re-run. `--cluster` sends the evaluations to a Ray cluster, one GPU each. Exit 0 when it ran (whatever the
verdicts); 2 for bad usage, a broken problem or a cluster that cannot be joined; 130 when interrupted (what finished is
kept).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from evaluators.executors import make_executor
from evaluators.executors.local import ClusterError, Executor, cluster_arg
from evaluators.judge.options import EvalOptions
from evaluators.judge.process_options import default_cache_dir
from evaluators.judge.readonly_code import refused_results_folder
from evaluators.judge.result import EvalResult
from evaluators.judge.strict import control_due, recheck_due, strict_options
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


@dataclass(frozen=True)
class Judged:
    """A problem's last line in results.jsonl: its report row, its first evaluation, its strict one and the control."""

    row: SuiteRow
    first: EvalResult | None = None
    strict: EvalResult | None = None
    control: EvalResult | None = None

    @property
    def awaits(self) -> str | None:
        """The run it is due that has not run, or whose run was lost: "strict", then "control"; None when settled."""
        if self.first is None:
            return None
        if self.strict is None:
            return "strict" if recheck_due(self.first, every_change=True) else None
        return "control" if self.control is None and control_due(self.first, self.strict, every_change=True) else None


def read_results(path: Path) -> dict[str, Judged]:
    """Problems already judged, by key (the last line of each); a line cut short by a kill is ignored."""
    judged = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                entry = json.loads(line)
                row = SuiteRow.model_validate(entry["row"])
            except (ValueError, KeyError, TypeError):
                continue
            runs = (_evaluation(entry.get(run)) for run in ("result", "strict", "control"))
            judged[row.key] = Judged(row, *runs)
    return judged


def _evaluation(data) -> EvalResult | None:
    try:
        return EvalResult.model_validate(data) if data else None
    except ValueError:
        return None


def _same_source(result: EvalResult, source: str) -> bool:
    """The evaluation was of this source (by the hash evaluate() records; none recorded: taken as the same)."""
    return not result.source_hash or result.source_hash == hashlib.sha256(source.encode()).hexdigest()[:16]


class ResultLog:
    """Appends each finished evaluation to results.jsonl at once, from whichever thread finished it."""

    def __init__(self, path: Path):
        self.path = path
        self.lock = threading.Lock()

    def append(
        self, row: SuiteRow, result: EvalResult, strict: EvalResult | None = None, control: EvalResult | None = None
    ) -> None:
        """One line: the report row, the first evaluation, the strict one and the control (null where none ran)."""
        runs = {"result": result, "strict": strict, "control": control}
        kept = {name: run.model_dump(mode="json") if run else None for name, run in runs.items()}
        line = json.dumps({"row": row.model_dump()} | kept)
        with self.lock, self.path.open("a") as log:
            log.write(line + "\n")


def judge(
    problems: dict[str, Problem],
    sources: dict[str, str],
    out: Path,
    executor: Executor,
    options: EvalOptions,
    console: Console,
    rechecks: dict[str, Judged] | None = None,
) -> dict[str, SuiteRow]:
    """Evaluate every candidate in `sources`; returns the new rows (errors as not-judged rows, not kept).

    A first result due a strict re-evaluation is kept at once and its strict run submitted from its callback, so
    the batch never waits for it before the rest; so is a strict one due a control. `rechecks` holds what an earlier
    run kept of candidates whose strict run or control never finished: only that run is submitted for those.
    """
    log = ResultLog(out / RESULTS_FILE)
    rechecks = rechecks or {}
    strict = strict_options(options)
    rows: dict[str, SuiteRow] = {}
    settled = threading.Condition()
    unsettled = [len(sources)]  # candidates whose verdict is not final yet
    with Progress(
        SpinnerColumn(), TextColumn("judging"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
    ) as progress:
        task = progress.add_task("judging", total=len(sources))

        def say(key: str, row: SuiteRow, note: str = "") -> None:
            speed = f" {row.speedup:.3g}x" if row.speedup is not None else ""
            if not note:
                note = " (cleared by strict re-evaluation)" if row.cleared_by_strict else ""
                note = " (set aside)" if row.set_aside else note
            # does_not_fit is the machine's limit, not a failed candidate: shown plain, as the report counts it apart.
            style = "green" if row.status == "correct" and not row.set_aside else "red"
            style = "default" if row.status == "does_not_fit" else style
            progress.console.print(f"{key}: {row.status}{speed}{note}", style=style, markup=False)

        def settle(key: str, row: SuiteRow) -> None:
            rows[key] = row
            say(key, row)
            progress.advance(task)

        def finishing(key: str, handle: Callable[[Future], SuiteRow | None]) -> Callable[[Future], None]:
            """A done-callback that settles the candidate, or hands on to its strict run, whatever happens."""

            def callback(future: Future) -> None:
                try:
                    row = handle(future)
                # Recording it failed, or the next run could not be submitted; any exception, even one that is not an
                # Exception from an evaluation's thread: a callback that raised would leave the batch waiting forever.
                except BaseException as error:
                    row = not_judged(key, f"evaluation failed: {type(error).__name__}: {_first_line(error)}")
                if row is None:  # a strict run is on its way
                    return
                try:
                    settle(key, row)
                finally:
                    with settled:
                        unsettled[0] -= 1
                        settled.notify_all()

            return callback

        def recheck(key: str, first: EvalResult) -> None:
            future = executor.submit(problems[key], sources[key], strict)
            future.add_done_callback(finishing(key, lambda done: strict_done(key, first, done)))

        def weigh(key: str, first: EvalResult, second: EvalResult) -> None:
            future = executor.submit(problems[key], problems[key].reference_as_candidate(), strict)
            future.add_done_callback(finishing(key, lambda done: control_done(key, first, second, done)))

        def first_done(key: str, future: Future) -> SuiteRow | None:
            try:
                result = future.result()
            except Exception as error:  # the reference or the machine failed, not the candidate
                # Not judged, so not kept: a re-run tries it again.
                return not_judged(key, f"evaluation failed: {type(error).__name__}: {_first_line(error)}")
            row = row_from_result(key, result)
            if not recheck_due(result, every_change=True):
                log.append(row, result)
                return row
            # Kept at once, so a re-run runs only the strict one; set aside meanwhile, should no re-run come.
            log.append(_awaiting(row, "its strict re-evaluation"), result)
            say(key, row, " (strict re-evaluation submitted)")
            recheck(key, result)
            return None

        def strict_done(key: str, first: EvalResult, future: Future) -> SuiteRow:
            result = _kept_run(future, "its strict re-evaluation", row_from_result(key, first))
            if isinstance(result, SuiteRow):
                return result
            row = row_from_result(key, first, strict=result)
            if not control_due(first, result, every_change=True):
                log.append(row, first, result)
                return row
            log.append(_awaiting(row, "its control"), first, result)
            say(key, row, " (control submitted: the reference judged as itself)")
            weigh(key, first, result)
            return None

        def control_done(key: str, first: EvalResult, second: EvalResult, future: Future) -> SuiteRow:
            result = _kept_run(future, "its control", row_from_result(key, first, strict=second))
            if isinstance(result, SuiteRow):
                return result
            row = row_from_result(key, first, strict=second, control=result)
            log.append(row, first, second, result)
            return row

        for key in sources:
            kept = rechecks.get(key)
            if kept is not None and kept.awaits == "control":
                progress.console.print(f"{key}: control submitted (its two runs kept)", markup=False)
                weigh(key, kept.first, kept.strict)
            elif kept is not None:
                progress.console.print(f"{key}: strict re-evaluation submitted (first evaluation kept)", markup=False)
                recheck(key, kept.first)
            else:
                future = executor.submit(problems[key], sources[key], options)
                future.add_done_callback(finishing(key, lambda done, k=key: first_done(k, done)))
        with settled:
            while unsettled[0] > 0:
                settled.wait(timeout=1.0)
    return rows


def _first_line(error: Exception | str) -> str:
    return next(iter(str(error).splitlines()), "")


def _awaiting(row: SuiteRow, what: str) -> SuiteRow:
    """The row kept while `what` runs: set aside, so a re-run without its candidate never counts it unconfirmed."""
    why = f"awaiting {what} (a re-run with its candidate runs it)"
    return row.model_copy(update={"set_aside": "; ".join(filter(None, [row.set_aside, why]))})


def _kept_run(future: Future, what: str, before: SuiteRow) -> EvalResult | SuiteRow:
    """A strict run's or control's result; or, where nothing of it can be kept, `before` set aside until a re-run.

    Not judged (an error) or too large for the device (the machine's verdict, not the candidate's): a re-run retries it.
    """
    try:
        result = future.result()
    except Exception as error:
        return _retried(before, f"{what} failed", f"{type(error).__name__}: {_first_line(error)}")
    if result.status == "does_not_fit":
        return _retried(before, f"{what} did not fit", result.message)
    return result


def _retried(row: SuiteRow, what: str, detail: str) -> SuiteRow:
    """The row of a candidate whose strict run or control left nothing kept: set aside until a re-run retries it."""
    why = f"{what} ({_first_line(detail)}; a re-run retries it)"
    return row.model_copy(update={"set_aside": "; ".join(filter(None, [row.set_aside, why]))})


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
        out = args.out or Path("runs") / f"eval-{args.candidates.resolve().name}"
        if refusal := refused_results_folder(out, default_cache_dir()):  # its journal is read back as written
            raise ValueError(refusal)
        suite = load_suite(args.suite, args.problems)
        problems, broken = suite.load_all()
        executor = make_executor(args.cluster, args.device)
    except (SuiteError, ProblemError, ValueError, ClusterError) as error:
        print(f"error: {str(error).splitlines()[0]}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    done = read_results(out / RESULTS_FILE)
    if args.compile_baseline:  # verdicts reached without the baseline are judged again, with it
        done = {key: judged for key, judged in done.items() if not _lacks_compile_timing(judged.row)}
    files = {entry.key: candidate_file(entry, args.candidates, args.sample) for entry in suite.problems}
    sources = {key: path.read_text() for key, path in files.items() if path is not None and key not in broken}
    rechecks = {}  # what an earlier run kept of candidates whose strict run or control did not finish
    for key, judged in list(done.items()):
        if key in sources and judged.awaits:
            if _same_source(judged.first, sources[key]):
                rechecks[key] = judged
            else:  # the candidate changed since: its first evaluation is not this source's
                del done[key]
    sources = {key: source for key, source in sources.items() if key not in done or key in rechecks}
    for key, reason in broken.items():
        console.print(f"{key}: problem could not be loaded: {reason}", style="red", markup=False)
    pending = f"{len(rechecks)} awaiting their strict re-evaluation or control, " if rechecks else ""
    console.print(
        f"{len(suite.problems)} problems from {args.suite}: {len(done) - len(rechecks)} already judged, {pending}"
        f"{len(sources) - len(rechecks)} to judge, {sum(path is None for path in files.values())} without a "
        f"candidate -> {out}"
    )
    where = executor.describe()
    try:
        options = EvalOptions(trials=args.trials, compile_baseline=args.compile_baseline)
        new = judge(problems, sources, out, executor, options, console, rechecks)
    except KeyboardInterrupt:
        console.print(f"interrupted; finished verdicts are in {out / RESULTS_FILE}; run again to continue")
        return 130
    finally:
        executor.close()
    rows = [
        new.get(e.key) or (done[e.key].row if e.key in done else not_judged(e.key, _why_not(e.key, broken, args)))
        for e in suite.problems
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
