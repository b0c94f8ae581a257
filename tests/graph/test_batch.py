"""The scientist over a suite (graph.batch) on an authored cassette: two problems, an interrupt and a re-run, a cap."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graph import batch
from graph.lab import ARCHIVE_FILE
from kernels.archive import Archive
from kernels.suite import load_suite

from .conftest import CASSETTES

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
SUITE = Path(__file__).parent / "batch_suite"
CASSETTE = json.loads((CASSETTES / "batch.json").read_text())
# Per problem and iteration: selector 1560 + designer 2 x 6300 (avenues, plans) + implementer 4600 tokens.
TOKENS_PER_ITERATION = 18760
# A model that passes the model check, for the tests of what is checked after it.
ANY_MODEL = f"replay:{CASSETTES / 'batch.json'}"


def write_cassette(path: Path, iterations: int) -> None:
    calls = [call for call in CASSETTE["calls"] if int(call["call_id"].split(".")[0][1:]) <= iterations]
    path.write_text(json.dumps(CASSETTE | {"calls": calls}))


def run_batch(cassette: Path, out: Path, *extra: str) -> int:
    args = ["--suite", str(SUITE), "--model", f"replay:{cassette}", "--budget", "2", "--out", str(out)]
    return batch.main([*args, "--experiments-per-iteration", "1", "--device", "cpu", "--retrieval", "lexical", *extra])


def rows(out: Path) -> dict[str, dict]:
    return {row["key"]: row for row in json.loads((out / "suite.json").read_text())["rows"]}


def batch_args(cassette: Path, out: Path) -> list[str]:
    args = ["--suite", str(SUITE), "--model", f"replay:{cassette}", "--budget", "2", "--out", str(out)]
    return [*args, "--experiments-per-iteration", "1", "--device", "cpu", "--retrieval", "lexical"]


def decided(out: Path) -> dict:
    """suite.json less what clocks decide: when it was written, wall times and measured speeds."""
    report = json.loads((out / "suite.json").read_text())
    clocked = {
        "written_at", "wall_s", "speedup", "speedup_band", "geomean_speedup", "roofline_fraction",
        "median_roofline_fraction",
    }  # fmt: skip
    drop = lambda part: {key: value for key, value in part.items() if key not in clocked}  # noqa: E731
    # Which candidate is best is measured too: on the CPU two close interpreter timings may swap it.
    rows = [drop(row) | {"message": re.sub(r"^best c\d+; ", "best ...; ", row["message"])} for row in report["rows"]]
    return drop(report) | {"summary": drop(report["summary"]), "rows": rows}


def test_an_interrupted_batch_run_again_ends_as_a_clean_one(tmp_path, monkeypatch, capsys):
    cassette, clean, out = tmp_path / "cassette.json", tmp_path / "clean", tmp_path / "out"
    write_cassette(cassette, iterations=2)
    assert batch.main(batch_args(cassette, clean)) == 0
    # The clean run is the yardstick: a problem it could not judge (the machine's failure) says why here.
    assert all(row["status"] != "not_judged" for row in rows(clean).values()), rows(clean)

    # SIGINT to the batch alone (as `kill -INT`; a terminal's Ctrl-C too: its runs have sessions of their own) once
    # the first run has measured its starting point: the batch passes it on, the run saves what it finished.
    env = dict(os.environ, PYTHONPATH=str(ROOT), KS_CACHE_DIR=str(tmp_path / "cache"))
    command = [sys.executable, "-m", "graph.batch", *batch_args(cassette, out)]
    stopped = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    archive = out / "runs" / "relu_matrix" / ARCHIVE_FILE
    while stopped.poll() is None and not (archive.is_file() and archive.read_text().endswith("\n")):
        time.sleep(0.2)
    stopped.send_signal(signal.SIGINT)
    assert stopped.wait(timeout=300) == 130, stopped.stdout.read()[-2000:]
    matrix = rows(out)["relu_matrix"]
    assert matrix["status"] == "not_judged" and "run stopped (exit 130)" in matrix["message"]
    assert not (out / "runs" / "relu_vector").exists()

    monkeypatch.setenv("KS_CACHE_DIR", str(tmp_path / "cache"))
    assert batch.main(batch_args(cassette, out)) == 0
    assert "0 finished before, 1 to resume" in capsys.readouterr().out
    assert decided(out) == decided(clean)
    for key in ("relu_matrix", "relu_vector"):
        # Nothing finished before the interrupt was done again: no candidate twice, every LLM call counted once.
        archive = Archive(out / "runs" / key / ARCHIVE_FILE)
        assert [r.id for r in archive.records] == ["c0000", "c0001", "c0002"]
        assert rows(out)[key]["tokens"] == 2 * TOKENS_PER_ITERATION

    def no_new_runs(*args, **kwargs):
        raise AssertionError("a finished problem was run again")

    monkeypatch.setattr(subprocess, "Popen", no_new_runs)
    assert batch.main(batch_args(cassette, out)) == 0
    assert "2 finished before, 0 to resume" in capsys.readouterr().out


def test_the_dollar_cap_stops_new_problems_and_they_count_as_failures(tmp_path):
    cassette, out = tmp_path / "cassette.json", tmp_path / "out"
    write_cassette(cassette, iterations=2)
    # One iteration costs about $0.06: the first run is told $0.01 is left, stops after it, and the cap is spent.
    assert run_batch(cassette, out, "--max-dollars", "0.01") == 0
    matrix, vector = rows(out).values()
    assert matrix["status"] == "correct" and matrix["tokens"] == TOKENS_PER_ITERATION
    assert vector["status"] == "not_judged" and "dollar cap $0.01 reached" in vector["message"]
    assert not (out / "runs" / "relu_vector").exists()
    assert json.loads((out / "suite.json").read_text())["summary"]["fast_0"] == 0.5


def test_a_batch_folder_candidates_can_write_is_refused(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("KS_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(SystemExit) as exit_:
        batch.main(["--suite", str(SUITE), "--model", ANY_MODEL, "--out", str(tmp_path / "cache" / "batch")])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and "inside the cache directory" in err, err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--suite", "/no/such/suite", "--model", ANY_MODEL], "suite path not found"),
        (["--suite", str(SUITE), "--model", "nocolon"], "bad model 'nocolon'"),
        (["--suite", str(SUITE), "--model", ANY_MODEL, "--problems", "*none*"], "matches '*none*'"),
        (["--suite", str(SUITE), "--model", ANY_MODEL, "--budget", "0"], "must be > 0"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(args, says, capsys):
    with pytest.raises(SystemExit) as exit_:
        batch.main(args)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


def test_a_new_run_gets_the_batchs_designer_counts_and_compile_baseline(tmp_path):
    args = batch.parser().parse_args(
        ["--suite", str(SUITE), "--avenues", "4", "--plans", "2", "--compile-baseline", "--model", "replay:x"]
    )
    job = batch.Job(entry=load_suite(str(SUITE)).problems[0], run_dir=tmp_path / "run")
    command = batch.run_command(job, args, "cpu", None)
    assert command[command.index("--avenues") + 1] == "4" and command[command.index("--plans") + 1] == "2"
    assert "--compile-baseline" in command


def test_an_unreachable_cluster_is_one_line_before_any_run_starts(tmp_path, capsys):
    pytest.importorskip("ray")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(SystemExit) as exit_:
        batch.main(["--suite", str(SUITE), "--model", ANY_MODEL, "--cluster", f"ray://127.0.0.1:{port}"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and "cannot reach the Ray cluster" in err


def test_a_batch_on_a_local_ray_sends_every_runs_evaluations_there(tmp_path):
    pytest.importorskip("ray")
    cassette, out = tmp_path / "cassette.json", tmp_path / "out"
    write_cassette(cassette, iterations=1)
    # The batch starts a local Ray; each run joins it through RAY_ADDRESS, one run per GPU (here: one at a time).
    assert run_batch(cassette, out, "--budget", "1", "--problems", "relu_vector", "--cluster", "ray") == 0
    (row,) = rows(out).values()
    assert row["status"] == "correct", row["message"]
    run_dir = out / "runs" / "relu_vector"
    assert json.loads((run_dir / "summary.json").read_text())["evaluations"].startswith("ray (auto): 1 node(s)")
    evaluated = [r.eval for r in Archive(run_dir / ARCHIVE_FILE).records if r.eval]
    assert evaluated and all(e["node"] == socket.gethostname() for e in evaluated)
    machine = json.loads((out / "suite.json").read_text())["machine"]
    assert machine["executor"].startswith("1 run(s) at once, evaluations on ray (ray): 1 node(s)")
