"""The command lines, end to end through the real offline embedding model (loaded once for this module)."""

import json
import subprocess
import sys

import pytest

from retrieval import index as index_module
from retrieval.cli import build_main, search_main
from retrieval.config import REPO_ROOT
from retrieval.index import build_index
from tests.retrieval.fakes import HashingEmbedding

pytestmark = pytest.mark.slow  # the first test pays for importing and loading all-MiniLM-L6-v2 (~10 s)


@pytest.fixture
def real_index(corpus, index_dir, capsys):
    assert build_main([str(corpus), "--index-dir", str(index_dir)]) == 0
    capsys.readouterr()
    return index_dir


def _search_json(capsys, *argv) -> list[dict]:
    assert search_main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_real_model_finds_by_meaning_and_json_has_the_contract_fields(real_index, capsys):
    query = "tensor core instructions issued by four warps together"
    for mode in ("vector", "hybrid"):
        hits = _search_json(capsys, query, "-k", "2", "--mode", mode, "--index-dir", str(real_index))
        assert len(hits) == 2
        assert {"text", "source", "score", "metadata"} <= set(hits[0])
        assert hits[0]["metadata"]["path"].endswith("hopper/wgmma.md")
        assert "Warpgroup matrix multiply on Hopper > Asynchronous issue" in hits[0]["source"]


def test_search_cli_filters_and_prints_text(real_index, capsys):
    hits = _search_json(capsys, "memory", "--arch", "hopper", "--topic", "tiling", "--index-dir", str(real_index))
    assert [hit["metadata"]["title"] for hit in hits] == ["Tiling for data reuse"]
    assert search_main(["bank conflicts", "-k", "1", "--index-dir", str(real_index)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("1. LDS on CDNA3: capacity and banks > Banks and conflicts") and "32 banks" in out


def test_build_cli_counts_skips_bad_input_and_indexes_the_rest(
    monkeypatch, corpus, index_dir, tmp_path, make_pdf, capsys
):
    (corpus / "broken.pdf").write_bytes(b"%PDF-1.4 cut short")
    (corpus / "paper.pdf").write_bytes(make_pdf(["Stream-K splits the iteration space evenly"]))
    (corpus / "guide.html").write_text("<title>Guide</title><h2>Occupancy</h2><p>Waves per SIMD.</p>")
    missing = tmp_path / "missing-notes"
    assert build_main([str(corpus), str(missing), "--index-dir", str(index_dir)]) == 1
    captured = capsys.readouterr()
    assert captured.out.startswith("files: 7 added, 0 updated, 0 unchanged, 0 removed, 2 skipped; chunks: 8")
    errors = captured.err.strip().splitlines()
    assert any(line.endswith(f"skipped {missing}: no such file or directory") for line in errors)
    assert any("broken.pdf: unreadable PDF" in line for line in errors)
    assert _search_json(capsys, "stream-k", "-k", "1", "--index-dir", str(index_dir))[0]["source"].startswith("paper")

    # With no PATH the build rescans the literature (here: the corpus) and every root indexed before.
    monkeypatch.setattr(index_module, "LITERATURE_DIR", corpus)
    (corpus / "broken.pdf").unlink()
    assert build_main(["--index-dir", str(index_dir)]) == 0
    assert "0 added, 0 updated, 7 unchanged" in capsys.readouterr().out


def test_search_cli_builds_a_missing_index_first(monkeypatch, corpus, index_dir, capsys):
    monkeypatch.setattr(index_module, "LITERATURE_DIR", corpus)
    assert search_main(["e4m3fnuz", "-k", "1", "--json", "--index-dir", str(index_dir)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)[0]["metadata"]["path"].endswith("fp8-formats.md")
    assert f"no index at {index_dir}; building it" in captured.err


@pytest.mark.parametrize("argv", [["lds", "-k", "0"], ["lds", "--mode", "semantic"], []])
def test_search_cli_rejects_bad_arguments(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        search_main(argv)
    assert exit_.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_modules_run_as_commands(corpus, index_dir, tmp_path):
    build_index([corpus], index_dir, embedding_function=HashingEmbedding())
    run = [sys.executable, "-m", "retrieval.search", "e4m3fnuz", "--mode", "lexical", "--json"]
    done = subprocess.run([*run, "--index-dir", str(index_dir)], capture_output=True, text=True, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["metadata"]["path"].endswith("fp8-formats.md")

    missing = tmp_path / "nothing-here"
    run = [sys.executable, "-m", "retrieval.build", str(missing), "--index-dir", str(tmp_path / "other")]
    done = subprocess.run(run, capture_output=True, text=True, cwd=REPO_ROOT)
    assert done.returncode == 1
    assert f"skipped {missing}: no such file or directory" in done.stderr


def test_machine_without_the_model_searches_lexically_with_one_line(real_index):
    # What a GPU machine without the 90 MB model sees: the import fails, search still answers.
    script = (
        "import sys; sys.modules['sentence_transformers'] = None\n"
        "from retrieval import search\n"
        f"for _ in range(3): hits = search('e4m3fnuz', k=1, index_dir={str(real_index)!r})\n"
        "print(hits[0].metadata['path'])"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("fp8-formats.md")
    [warning] = done.stderr.strip().splitlines()
    assert "all-MiniLM-L6-v2 unavailable" in warning and "searching lexically" in warning
