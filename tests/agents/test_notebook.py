from agents.notebook import archive_summary, notebook_summary, selectable_ids
from kernels.archive import Archive, CandidateRecord


def synthetic_archive(iterations: int) -> Archive:
    archive = Archive()
    archive.add(CandidateRecord(id="c0000", source="seed", status="seed", speedup=1.0, runtime_ms=1.0))
    for i in range(1, iterations + 1):
        parent = archive.best()
        ok = i % 3 != 0
        speedup = parent.speedup * (1.02 if i % 2 else 0.97) if ok else None
        archive.add(
            CandidateRecord(
                id=archive.next_id(),
                parent_id=parent.id,
                iteration=i,
                source="x" * 2000,
                status="correct" if ok else "compile_error",
                speedup=speedup,
                runtime_ms=1 / speedup if speedup else None,
                experiment={
                    "title": f"idea {i} " + "long " * 50,
                    "mechanism": "because " * 100,
                    "expected_speedup_min": 1.05,
                    "expected_speedup_max": 1.3,
                    "risk": "medium",
                },
                eval={"device": "cuda", "message": "error: " + "detail " * 60},
            )
        )
    return archive


def test_summaries_name_best_failures_lineage_and_outcomes():
    archive = synthetic_archive(6)
    summary = archive_summary(archive)
    best = archive.best()
    assert f"cuda: {best.id}" in summary and "Recent failures:" in summary and "compile_error" in summary
    assert "Lineage of the best: c0000" in summary and "Totals: 7 candidates" in summary
    notebook = notebook_summary(archive)
    assert "iter 1, parent c0000: c0001" in notebook and "gained +2%" in notebook and "compile_error" in notebook
    assert selectable_ids(archive)[0] == best.id


def test_summaries_stay_bounded_as_the_archive_grows():
    # Past the first few dozen candidates every list is full, so the text stops growing.
    middle, large = synthetic_archive(50), synthetic_archive(200)
    assert abs(len(archive_summary(large)) - len(archive_summary(middle))) < 100 and len(archive_summary(large)) < 4000
    assert (
        abs(len(notebook_summary(large)) - len(notebook_summary(middle))) < 100 and len(notebook_summary(large)) < 6000
    )
    assert len(archive_summary(large).splitlines()) <= 40
    assert "earlier experiments" in notebook_summary(large, max_entries=8)
    assert "earlier) ->" in archive_summary(large)


def test_empty_archive():
    assert archive_summary(Archive()) == "The archive is empty."
    assert notebook_summary(Archive()) == "No experiments yet."
