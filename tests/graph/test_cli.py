"""The CLI's contract for bad input: one line on stderr and exit status 2, before any work starts."""

import json
import subprocess
import sys

import pytest

from graph import run

from .conftest import CASSETTES, ROOT

# What --help must not wait for (about a second on a small machine): LangChain and LangGraph, rich, the torch
# stack, and the evaluators beyond what a flag's check needs.
HEAVY_AT_HELP = (
    "langchain_core", "langgraph", "langsmith", "rich", "torch", "triton", "evaluators.executors", "evaluators.judge",
    "evaluators.suites", "graph.lab",
)  # fmt: skip


def _usage_error(capsys, *args):
    with pytest.raises(SystemExit) as exit_info:
        run.main(list(args))
    err = capsys.readouterr().err.strip()
    return exit_info.value.code, err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
        (["--problem", "no_such_problem"], "unknown problem 'no_such_problem'"),
        (["--problem", "missing/problem.py"], "problem file not found"),
        (["--iterations", "0"], "must be > 0"),
        (["--device", "tpu"], "invalid choice: 'tpu'"),
        (["--model", "gemini"], "bad model 'gemini'"),
        (["--model", "replay:/no/such/cassette.json"], "cassette not found"),
        (["--model", "nosuchprovider:x"], "unknown model provider 'nosuchprovider'"),
        (["--model-for", "debugger=nosuchprovider:x"], "unknown model provider 'nosuchprovider'"),
        (["--iterations", "4"], "holds 3 iteration(s), fewer than the 4 asked for"),
        (["--model", f"replay:{CASSETTES / 'short.json'}", "--iterations", "3"], "short.json holds 2 iteration(s)"),
        (["--model-for", "critic=replay:x"], "unknown role 'critic'"),
        (["--resume", "never-ran"], "no run to resume"),
        (["--target", "tpu9"], "unknown target 'tpu9'; known targets: mi300x, mi325x, mi355x, h100, h200, a100, cpu"),
        (
            ["--model", f"replay:{CASSETTES / 'short.json'}", "--record-cassette", "copy.json"],
            "--record-cassette records live models, but selector, hypothesizer, implementer, debugger replay",
        ),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(capsys, tmp_path, monkeypatch, args, says):
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)  # the demo cassette is the default model
    monkeypatch.chdir(tmp_path)  # runs/ of a stray success would land here, not in the checkout
    code, err = _usage_error(capsys, *args)
    assert code == 2
    assert len(err.splitlines()) == 1 and says in err, err


def test_the_demo_cassette_is_refused_for_another_problem(capsys, monkeypatch):
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    code, err = _usage_error(capsys, "--problem", "row_softmax")
    assert code == 2 and "demo cassette is for fused_residual_norm" in err


def test_a_new_run_refuses_a_directory_that_holds_one(capsys, tmp_path):
    (tmp_path / "run.json").write_text("{}")
    short = f"replay:{CASSETTES / 'short.json'}"
    code, err = _usage_error(capsys, "--model", short, "--iterations", "2", "--out", str(tmp_path))
    assert code == 2 and "already holds a run" in err


@pytest.mark.parametrize("inside", ["cache", "cache/runs/r1"])
def test_a_run_refuses_a_folder_candidates_can_write(capsys, tmp_path, monkeypatch, inside):
    # The archive and checkpoints are read back as written: in the cache directory a candidate could plant them.
    monkeypatch.setenv("KS_CACHE_DIR", str(tmp_path / "cache"))
    short = f"replay:{CASSETTES / 'short.json'}"
    code, err = _usage_error(capsys, "--model", short, "--iterations", "2", "--out", str(tmp_path / inside))
    assert code == 2 and len(err.splitlines()) == 1 and "inside the cache directory" in err, err
    assert not (tmp_path / inside / "run.json").exists()
    code, err = _usage_error(capsys, "--resume", "r1", "--out", str(tmp_path / inside))
    assert code == 2 and "inside the cache directory" in err, err


def test_help_lists_the_flags(capsys):
    with pytest.raises(SystemExit) as exit_info:
        run.main(["--help"])
    out = capsys.readouterr().out
    assert exit_info.value.code == 0
    for flag in ("--resume", "--record-cassette", "--max-concurrency", "--max-dollars", "--retrieval", "--target"):
        assert flag in out


@pytest.mark.parametrize("module", ["graph.run", "graph.batch"])
def test_help_answers_before_the_heavy_modules_load(module):
    # A fresh interpreter: this one has loaded everything already.
    script = (
        "import importlib, json, sys\n"
        f"try:\n    importlib.import_module({module!r}).main(['--help'])\nexcept SystemExit:\n    pass\n"
        f"heavy = {HEAVY_AT_HELP!r}\n"
        "print(json.dumps(sorted(m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in heavy))))"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True)
    assert "--help" in done.stdout and json.loads(done.stdout.splitlines()[-1]) == []


def test_a_provider_whose_package_is_missing_is_refused_before_any_work(capsys, monkeypatch):
    from agents.models import PROVIDERS, Provider

    monkeypatch.setitem(PROVIDERS, "absent", Provider("langchain-absent", "langchain_absent_xyz", "ChatAbsent"))
    code, err = _usage_error(capsys, "--model", "absent:m")
    assert code == 2 and "needs the package langchain-absent: pip install langchain-absent" in err


def test_a_resume_past_the_cassette_is_refused_before_any_work(capsys, tmp_path):
    settings = {"context": {"model": f"replay:{CASSETTES / 'short.json'}", "iterations": 2}, "max_concurrency": 1}
    (tmp_path / "run.json").write_text(json.dumps(settings))
    code, err = _usage_error(capsys, "--resume", tmp_path.name, "--out", str(tmp_path), "--iterations", "5")
    assert code == 2 and "holds 2 iteration(s), fewer than the 5 asked for" in err


def test_cassette_paths_used_by_the_tests_exist():
    assert (CASSETTES / "edges.json").is_file() and (CASSETTES / "short.json").is_file()
