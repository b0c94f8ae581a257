"""`python -m graph.run --cluster`: bad or unreachable clusters stop before any LLM call; a run on a local Ray."""

import json
import socket
import sys

import pytest

from graph.lab import ARCHIVE_FILE
from kernels.archive import Archive

from .conftest import SHORT, cli


def usage_error(capsys, *args) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_info:
        cli(*args)
    return exit_info.value.code, capsys.readouterr().err.strip()


def test_an_unknown_cluster_is_bad_usage(capsys, tmp_path):
    code, err = usage_error(capsys, *SHORT, "--cluster", "slurm", "--out", str(tmp_path / "run"))
    assert code == 2 and len(err.splitlines()) == 1 and "unknown cluster 'slurm'" in err


def test_a_cluster_without_ray_is_one_line_before_the_run_starts(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    monkeypatch.delitem(sys.modules, "evaluators.executors.ray", raising=False)
    code, err = usage_error(capsys, *SHORT, "--iterations", "1", "--cluster", "ray", "--out", str(tmp_path / "run"))
    assert code == 2 and len(err.splitlines()) == 1 and "needs Ray: pip install" in err
    assert not (tmp_path / "run").exists()


def test_an_unreachable_cluster_is_one_line_before_any_llm_call(capsys, tmp_path):
    pytest.importorskip("ray")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code, err = usage_error(
        capsys, *SHORT, "--iterations", "1", "--cluster", f"ray://127.0.0.1:{port}", "--out", str(tmp_path / "run")
    )
    assert code == 2 and len(err.splitlines()) == 1 and f"cannot reach the Ray cluster at ray://127.0.0.1:{port}" in err
    assert not (tmp_path / "run").exists()  # nothing started: no run directory, no checkpoint, no LLM call


@pytest.mark.slow
def test_a_run_on_a_local_ray_archives_where_each_evaluation_ran(tmp_path):
    pytest.importorskip("ray")
    run_dir = tmp_path / "on-ray"
    assert cli(*SHORT, "--iterations", "1", "--cluster", "ray", "--out", str(run_dir)) == 0
    records = Archive(run_dir / ARCHIVE_FILE).records
    assert [r.status for r in records] == ["reference", "seed", "correct"]
    assert all(r.eval["node"] == socket.gethostname() and r.eval["gpu"] == "cpu" for r in records if r.eval)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["evaluations"].startswith("ray (ray): 1 node(s)")
    assert f"- evaluations: {summary['evaluations']}" in (run_dir / "report.md").read_text()
    assert json.loads((run_dir / "run.json").read_text())["context"]["cluster"] == "ray"
