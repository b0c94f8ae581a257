"""The CLI's contract for bad input: one line on stderr and exit status 2, before any work starts."""

import pytest

from graph import run

from .conftest import CASSETTES


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
    code, err = _usage_error(capsys, "--model", f"replay:{CASSETTES / 'short.json'}", "--out", str(tmp_path))
    assert code == 2 and "already holds a run" in err


def test_help_lists_the_flags(capsys):
    with pytest.raises(SystemExit) as exit_info:
        run.main(["--help"])
    out = capsys.readouterr().out
    assert exit_info.value.code == 0
    for flag in ("--resume", "--record-cassette", "--max-concurrency", "--max-dollars", "--retrieval", "--target"):
        assert flag in out


def test_cassette_paths_used_by_the_tests_exist():
    assert (CASSETTES / "edges.json").is_file() and (CASSETTES / "short.json").is_file()
