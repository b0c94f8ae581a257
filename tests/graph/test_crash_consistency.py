"""Crash consistency: a cassette run stopped at many points, each stop resumed, ends as an uninterrupted run does.

One clean run, then one chain over a fresh run directory: every process of the chain is stopped by one fault
(SIGINT, SIGTERM or SIGKILL at a node boundary or during an evaluation, a revoked API key, the reference process
killed) and the next one resumes it, until a last resume finishes it. Both run the demo cassette for two
iterations of three experiments on the CPU, one experiment at a time, so that at any stop at most one
evaluation is in flight. A Ctrl-C or SIGTERM lets the node in flight finish and ends the experiment before its next
node (graph.stopping); the chain ends early when a fault's point is never reached.
tests/graph/fault_runner.py injects the faults and logs every finished evaluation.
"""

import collections
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from graph.lab import ARCHIVE_FILE
from graph.run import DEMO_CASSETTE
from kernels.archive import Archive

from .conftest import CPU, read_summary

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
RUNNER = Path(__file__).parent / "fault_runner.py"
ARGS = ["--model", f"replay:{DEMO_CASSETTE}", "--iterations", "2", "--max-concurrency", "1", *CPU]
KILLED = -signal.SIGKILL
# (fault, how the stopped process must end). Node counts are per process, and a resumed process first streams
# again the updates of the tasks its checkpoint holds: node:2 after a node stop is the next node.
CHAIN = [
    ("node:1:SIGKILL", KILLED),  # after setup: reference and seed measured
    ("node:2:SIGINT", 130),  # after the selector
    ("node:2:SIGTERM", 130),  # after the designer
    ("llm:1", 3),  # the implementer's key is revoked
    ("evaluation:1:SIGKILL", KILLED),  # kill -9 while slot 0 is evaluated: it is lost, and redone
    ("node:3:SIGTERM", 130),  # inside slot 0
    ("worker:1", 4),  # the reference process dies under an evaluation
    ("evaluation:1:SIGINT", 130),  # Ctrl-C while an evaluation runs: it finishes and is kept
    ("node:2:SIGKILL", KILLED),
    ("node:3:SIGINT", 130),
    ("evaluation:2:SIGTERM", 130),
    ("node:4:SIGKILL", KILLED),
]


def run_once(run_dir: Path, log: Path, fault: str | None, resume: bool) -> subprocess.CompletedProcess:
    # A cache (and timing lock) of the run's own: nothing else on the machine makes it wait.
    env = dict(os.environ, KS_TEST_EVAL_LOG=str(log), PYTHONPATH=str(ROOT), KS_CACHE_DIR=str(run_dir.parent / "cache"))
    env.pop("KS_TEST_FAULT", None)
    env.pop("GOOGLE_API_KEY", None)
    if fault:
        env["KS_TEST_FAULT"] = fault
    args = ["--resume", run_dir.name] if resume else ARGS
    command = [sys.executable, str(RUNNER), *args, "--out", str(run_dir)]
    return subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)


def evaluations(log: Path) -> collections.Counter:
    """(source digest, strict) of every finished evaluation, counted."""
    lines = log.read_text().splitlines() if log.is_file() else []
    return collections.Counter(tuple(line.split()[1:3]) for line in lines if line.startswith("eval "))


def candidates(run_dir: Path) -> list[tuple]:
    """The archive as a run decides it: ids, lineage, sources and verdicts (timings vary between runs)."""
    records = Archive(run_dir / ARCHIVE_FILE).records
    return [(r.id, r.parent_id, r.iteration, r.slot, r.status, r.source) for r in records]


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    root = tmp_path_factory.mktemp("clean")
    done = run_once(root / "run", root / "evals.log", None, resume=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return {"dir": root / "run", "evals": evaluations(root / "evals.log")}


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    root = tmp_path_factory.mktemp("chain")
    run_dir, log, stops = root / "run", root / "evals.log", []
    for number, (fault, expected) in enumerate(CHAIN):
        before = evaluations(log)
        stopped = run_once(run_dir, log, fault, resume=number > 0)
        if stopped.returncode == 0:  # the run ended before this fault's point: the chain is done
            break
        assert stopped.returncode == expected, f"{fault}: exit {stopped.returncode}\n{stopped.stderr[-2000:]}"
        fired = [line for line in log.read_text().splitlines() if line.startswith("fault ")]
        stops.append({"fault": fault, "where": fired[-1], "finished": evaluations(log) - before, "out": stopped})
    else:
        final = run_once(run_dir, log, None, resume=True)
        assert final.returncode == 0, final.stderr[-2000:]
    return {"dir": run_dir, "evals": evaluations(log), "stops": stops, "log": log}


def test_the_run_was_stopped_every_way_at_main_and_experiment_nodes(chain):
    assert len(chain["stops"]) >= 9, [stop["where"] for stop in chain["stops"]]
    faults = " ".join(stop["fault"] for stop in chain["stops"])
    for way in ("SIGINT", "SIGTERM", "SIGKILL", "evaluation:", "llm:", "worker:"):
        assert way in faults
    hit = " ".join(stop["where"] for stop in chain["stops"])
    for node in ("setup", "selector", "hypothesizer"):
        assert node in hit, f"no stop after a {node} node: {hit}"
    assert any(node in hit for node in ("implementer", "evaluate", "debugger", "recheck")), hit


def test_the_resumed_run_holds_the_same_candidates_as_an_uninterrupted_one(clean, chain):
    assert candidates(chain["dir"]) == candidates(clean["dir"])
    slots = [(iteration, slot) for _, _, iteration, slot, _, _ in candidates(chain["dir"]) if iteration]
    assert len(slots) == len(set(slots)) == 6


def test_its_report_is_complete(clean, chain):
    summary, expected = read_summary(chain["dir"]), read_summary(clean["dir"])
    for key in ("candidates", "iterations", "statuses", "stop_reason"):
        assert summary[key] == expected[key], key
    # The best is decided by clocks (CPU timings of close candidates vary between runs): it is a correct one.
    statuses = {record.id: record.status for record in Archive(chain["dir"] / ARCHIVE_FILE).records}
    assert statuses[summary["best_id"]] in ("correct", "seed")
    # Every LLM call is accounted once, whatever stopped the run around it (the seconds they took vary).
    untimed = lambda per_role: {role: totals | {"seconds": None} for role, totals in per_role.items()}  # noqa: E731
    assert summary["tokens"] == expected["tokens"]
    assert untimed(summary["per_role"]) == untimed(expected["per_role"])
    report = (chain["dir"] / "report.md").read_text()
    for record in Archive(chain["dir"] / ARCHIVE_FILE).records:
        assert record.id in report
    assert "## Lineage" in report and "## Notebook of experiments" in report


def test_no_finished_evaluation_is_redone(clean, chain):
    ordinary = lambda counts: {key: n for key, n in counts.items() if key[1] == "False"}  # noqa: E731
    # Strict re-evaluations follow the wall-clock cross-check, which varies between runs; each runs once at most.
    assert ordinary(chain["evals"]) == ordinary(clean["evals"])
    assert all(n == 1 for key, n in chain["evals"].items() if key[1] == "True")
    # Every control judges the one reference, and a run keeps reusing the first judged: each one kept ran once.
    records = Archive(chain["dir"] / ARCHIVE_FILE).records
    controls = {json.dumps(record.control_eval, sort_keys=True) for record in records if record.control_eval}
    assert sum(n for key, n in chain["evals"].items() if key[1] == "control") == len(controls)
    finished_before = sum(sum(stop["finished"].values()) for stop in chain["stops"])
    assert finished_before > 0, "the stops kept no finished evaluation"


def test_ctrl_c_keeps_the_evaluation_it_interrupted(chain):
    stop = next(stop for stop in chain["stops"] if stop["fault"] == "evaluation:1:SIGINT")
    assert sum(stop["finished"].values()) == 1  # the one in flight finished, was saved, and is not redone
    assert "interrupted: saving what has finished" in stop["out"].stderr
    assert "resume with: python -m graph.run --resume run" in stop["out"].stdout


def test_a_revoked_key_and_a_dead_reference_say_so_in_one_line(chain):
    by_fault = {stop["fault"]: stop["out"] for stop in chain["stops"]}
    errors = [line for line in by_fault["llm:1"].stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "API key not valid" in errors[0]
    errors = [line for line in by_fault["worker:1"].stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "the reference process failed" in errors[0]


def test_a_finished_run_resumed_again_does_nothing(chain):
    log = chain["log"]
    before = evaluations(log)
    again = run_once(chain["dir"], log, None, resume=True)
    assert again.returncode == 0 and "already finished" in again.stdout
    assert evaluations(log) == before
    assert json.loads((chain["dir"] / "summary.json").read_text())["best_id"]
