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
                eval={"device": "cuda", "message": "error: " + "detail " * 60}
                | ({"speedup_band": [0.995 * speedup, 1.005 * speedup]} if ok else {}),
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


def test_a_candidate_set_aside_is_not_selectable_and_is_marked_for_the_agents():
    archive = synthetic_archive(2)
    cheat = archive.add(
        CandidateRecord(
            id=archive.next_id(),
            parent_id="c0000",
            iteration=3,
            source="cache keyed on data_ptr",
            status="correct",
            speedup=1972.0,
            experiment={"title": "memoize", "mechanism": "reuse outputs"},
            eval={"device": "cuda", "status": "correct"},
            set_aside="speedup 1972.0x is beyond the plausible 10x",
        )
    )
    assert cheat.id not in selectable_ids(archive) and archive.best().id != cheat.id
    summary = archive_summary(archive)
    assert "Set aside, not to build on (1;" in summary and f"{cheat.id} 1972x claimed: speedup 1972.0x" in summary
    assert f"Best per configuration:\n  cuda: {archive.best().id}" in summary
    assert "1972x claimed, SET ASIDE" in notebook_summary(archive)


def test_the_selector_sees_interpreter_speedups_with_their_significant_figures():
    archive = Archive()
    archive.add(CandidateRecord(id="c0000", source="ref", status="reference", speedup=1.0, runtime_ms=30.0))
    shapes = [{"name": "M=4096", "speedup": 0.00131}, {"name": "M=16", "speedup": 0.000912}]
    archive.add(
        CandidateRecord(
            id="c0001", parent_id="c0000", source="seed", status="seed", speedup=0.0012345, runtime_ms=24000.0,
            eval={"shapes": shapes},
        )
    )  # fmt: skip
    summary = archive_summary(archive)
    assert "c0001 0.00123x" in summary and "shapes: M=4096 0.00131x, M=16 0.000912x" in summary
    assert "0.00x" not in summary
