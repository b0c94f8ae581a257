import json

import pytest

from kernels.archive import Archive, ArchiveError, CandidateRecord


def record(cid, parent=None, status="correct", speedup=1.0, **extra):
    return CandidateRecord(id=cid, parent_id=parent, source=f"# {cid}", status=status, speedup=speedup, **extra)


def test_add_persists_as_json_lines_and_reloads(tmp_path):
    path = tmp_path / "run" / "archive.jsonl"
    archive = Archive(path)
    archive.add(record("c0000", status="seed", speedup=1.0))
    archive.add(record("c0001", parent="c0000", speedup=1.5, experiment={"title": "vectorize"}))
    lines = path.read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["c0000", "c0001"]

    reloaded = Archive(path)
    assert [r.id for r in reloaded.records] == ["c0000", "c0001"]
    assert reloaded.get("c0001").experiment == {"title": "vectorize"}
    assert reloaded.next_id() == "c0002"


def test_in_memory_archive_writes_nothing(tmp_path):
    archive = Archive()
    archive.add(record("c0000"))
    assert len(archive) == 1 and archive.path is None


def test_duplicate_id_and_unknown_id_are_clear_errors():
    archive = Archive()
    archive.add(record("c0000"))
    with pytest.raises(ArchiveError, match="already"):
        archive.add(record("c0000"))
    with pytest.raises(ArchiveError, match="c0099"):
        archive.get("c0099")


def test_corrupt_line_names_file_and_line(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps(record("c0000").model_dump()) + "\n" + '{"id": "c0001"}\n')
    with pytest.raises(ArchiveError, match=r"a.jsonl:2"):
        Archive(path)


def test_best_is_highest_speedup_among_correct_only():
    archive = Archive()
    archive.add(record("c0000", status="seed", speedup=1.0))
    archive.add(record("c0001", parent="c0000", status="incorrect", speedup=9.0))
    archive.add(record("c0002", parent="c0000", speedup=2.0))
    archive.add(record("c0003", parent="c0002", status="compile_error", speedup=None))
    archive.add(record("c0004", parent="c0002", speedup=1.7))
    assert archive.best().id == "c0002"
    assert [r.id for r in archive.correct()] == ["c0000", "c0002", "c0004"]
    assert [r.id for r in archive.recent_failures(5)] == ["c0001", "c0003"]
    assert [r.id for r in archive.recent_failures(1)] == ["c0003"]


def test_best_of_empty_archive_is_none():
    assert Archive().best() is None
    assert Archive().next_id() == "c0000"


def test_lineage_runs_root_first():
    archive = Archive()
    archive.add(record("c0000", status="seed"))
    archive.add(record("c0001", parent="c0000"))
    archive.add(record("c0002", parent="c0000"))
    archive.add(record("c0003", parent="c0002"))
    assert [r.id for r in archive.lineage("c0003")] == ["c0000", "c0002", "c0003"]
    assert [r.id for r in archive.lineage("c0000")] == ["c0000"]


def test_lineage_detects_cycles():
    archive = Archive()
    archive.add(record("c0000", parent="c0001"))
    archive.add(record("c0001", parent="c0000"))
    with pytest.raises(ArchiveError, match="cycle"):
        archive.lineage("c0001")


def test_a_candidate_set_aside_is_correct_but_never_best(tmp_path):
    path = tmp_path / "archive.jsonl"
    archive = Archive(path)
    archive.add(record("c0000", status="seed", speedup=1.0))
    archive.add(record("c0001", parent="c0000", speedup=1972.0, set_aside="speedup 1972x is beyond the plausible 10x"))
    archive.add(record("c0002", parent="c0000", speedup=30.0, cleared_by_strict=True, strict_eval={"strict": True}))
    reloaded = Archive(path)
    assert [r.id for r in reloaded.correct()] == ["c0000", "c0001", "c0002"]
    assert [r.id for r in reloaded.set_aside()] == ["c0001"]
    assert [r.id for r in reloaded.eligible()] == ["c0000", "c0002"]
    assert reloaded.best().id == "c0002" and reloaded.get("c0002").cleared_by_strict


def test_records_from_before_quarantine_read_as_not_set_aside(tmp_path):
    path = tmp_path / "old.jsonl"
    old = record("c0000").model_dump(exclude={"set_aside", "cleared_by_strict", "strict_eval"})
    path.write_text(json.dumps(old) + "\n")
    loaded = Archive(path).get("c0000")
    assert (loaded.set_aside, loaded.cleared_by_strict, loaded.strict_eval, loaded.is_eligible) == (
        None,
        False,
        {},
        True,
    )
