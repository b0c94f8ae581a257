"""Short real runs (one experiment per iteration, short.json): a budget stop, and an authentication error."""

import json

import pytest

from graph.lab import ARCHIVE_FILE
from kernels.archive import Archive

from .conftest import CASSETTES, CPU, ServiceError, cli, fail_role_once, read_summary

pytestmark = pytest.mark.slow
DESIGN = ["--avenues", "3", "--plans", "3", "--experiments-per-iteration", "1", *CPU]
SHORT = ["--model", f"replay:{CASSETTES / 'short.json'}", *DESIGN]


def test_token_budget_ends_the_run_cleanly_with_its_report(tmp_path):
    run_dir = tmp_path / "budget"
    assert cli(*SHORT, "--iterations", "2", "--max-tokens", "1000", "--out", str(run_dir)) == 0
    summary = read_summary(run_dir)
    # Iteration 1 spends ~12k tokens, so the budget is found spent when it is recorded, before iteration 2.
    assert summary["stop_reason"].startswith("tokens:")
    assert summary["iterations"] == 1 and summary["candidates"] == 1
    # Which is best is measured: on a loaded CPU the interpreter's band may not clear the seed (seen in a full run).
    assert summary["best_id"] in ("c0001", "c0002") and (run_dir / "best_kernel.py").exists()
    assert (run_dir / "report.md").exists()


def test_authentication_error_ends_the_run_with_one_line_and_keeps_it_resumable(tmp_path, monkeypatch, capsys):
    run_dir = tmp_path / "auth"
    fail_role_once(monkeypatch, "selector", ServiceError(401, "API key not valid. Please pass a valid API key."))
    assert cli(*SHORT, "--iterations", "1", "--out", str(run_dir)) == 3
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "API key not valid" in errors[0] and "selector" in errors[0]
    assert [r.status for r in Archive(run_dir / ARCHIVE_FILE).records] == ["reference", "seed"]
    assert (run_dir / "checkpoints.sqlite").exists() and not (run_dir / "summary.json").exists()
    # With the key fixed, the same run goes on from its checkpoint: the seed is not measured again.
    assert cli("--resume", "auth", "--out", str(run_dir)) == 0
    assert [r.id for r in Archive(run_dir / ARCHIVE_FILE).records] == ["c0000", "c0001", "c0002"]
    assert json.loads((run_dir / "summary.json").read_text())["iterations"] == 1


def test_a_broken_literature_index_costs_citations_not_the_run(tmp_path, monkeypatch):
    import retrieval

    def broken_search(*args, **kwargs):
        raise OSError("index directory is not readable")

    monkeypatch.setattr(retrieval, "search", broken_search)
    run_dir = tmp_path / "nolit"
    cassette = CASSETTES / "without_literature.json"
    assert cli("--model", f"replay:{cassette}", *DESIGN, "--iterations", "1", "--out", str(run_dir)) == 0
    assert read_summary(run_dir)["candidates"] == 1
    assert "literature search failed" in (run_dir / "report.md").read_text()
