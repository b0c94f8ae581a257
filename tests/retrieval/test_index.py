"""Building and incrementally updating an index: only changes are embedded, removed files leave."""

import shutil

from retrieval.index import build_index
from retrieval.manifest import load_manifest
from retrieval.query import open_index
from retrieval.vectors import VectorStore
from tests.retrieval.fakes import BlindEmbedding, HashingEmbedding, MissingModel

FILES = 5  # four notes and one text file in the fixture corpus


def _vector_paths(index_dir, embedding) -> list[str]:
    result = VectorStore(index_dir, embedding).collection.get(include=["metadatas"])
    return sorted({metadata["path"] for metadata in result["metadatas"]})


def test_first_build_embeds_every_chunk(corpus, index_dir, embedding):
    report = build_index([corpus], index_dir, embedding_function=embedding)
    assert len(report.added) == FILES and not report.skipped
    assert report.chunks == embedding.embedded == report.embedded_chunks
    assert report.vectors
    assert VectorStore(index_dir, embedding).collection.count() == report.chunks


def test_rebuild_without_changes_embeds_nothing(corpus, index_dir, embedding):
    first = build_index([corpus], index_dir, embedding_function=embedding)
    second_model = HashingEmbedding()
    second = build_index([corpus], index_dir, embedding_function=second_model)
    assert len(second.unchanged) == FILES and not (second.added or second.updated or second.removed)
    assert second_model.embedded == 0 and second.embedded_chunks == 0
    assert second.chunks == first.chunks
    assert "5 unchanged" in second.summary()


def test_changed_file_is_reembedded_and_its_old_text_leaves(corpus, index_dir, embedding):
    build_index([corpus], index_dir, embedding_function=embedding)
    note = corpus / "hopper" / "wgmma.md"
    note.write_text(note.read_text().replace("fence and a commit group", "wgmma.wait_group barrier"))
    model = HashingEmbedding()
    report = build_index([corpus], index_dir, embedding_function=model)
    assert report.updated == [note.as_posix()] and len(report.unchanged) == FILES - 1
    assert model.embedded == len(load_manifest(index_dir).files[note.as_posix()].chunks)
    index = open_index(index_dir, model)
    assert index.search("wgmma.wait_group", k=1, mode="lexical")[0].metadata["path"] == note.as_posix()
    assert all(p.metadata["path"] != note.as_posix() for p in index.search("commit fence", mode="lexical"))
    assert VectorStore(index_dir, model).collection.count() == report.chunks


def test_removed_file_leaves_manifest_and_vectors(corpus, index_dir, embedding):
    build_index([corpus], index_dir, embedding_function=embedding)
    gone = corpus / "cdna3" / "fp8-formats.md"
    gone.unlink()
    report = build_index([corpus], index_dir, embedding_function=embedding)
    assert report.removed == [gone.as_posix()]
    assert gone.as_posix() not in load_manifest(index_dir).files
    assert gone.as_posix() not in _vector_paths(index_dir, embedding)
    assert not open_index(index_dir, embedding).search("e4m3fnuz", mode="lexical")


def test_earlier_roots_are_rescanned_by_later_builds(corpus, index_dir, embedding, tmp_path):
    build_index([corpus], index_dir, embedding_function=embedding)
    (corpus / "techniques" / "split-k.md").write_text("# Split-K\n\nSplit the K loop over programs.\n")
    extra = tmp_path / "paper.txt"
    extra.write_text("Stream-K assigns iterations, not tiles.")
    report = build_index([extra], index_dir, embedding_function=embedding)
    assert sorted(report.added) == sorted([(corpus / "techniques" / "split-k.md").as_posix(), extra.as_posix()])
    assert len(report.unchanged) == FILES


def test_vanished_root_takes_its_files_along(corpus, index_dir, embedding, tmp_path):
    build_index([corpus], index_dir, embedding_function=embedding)
    shutil.rmtree(corpus / "hopper")
    report = build_index([corpus], index_dir, embedding_function=embedding)
    assert report.removed == [(corpus / "hopper" / "wgmma.md").as_posix()]


def test_lost_vectors_are_rebuilt(corpus, index_dir, embedding):
    first = build_index([corpus], index_dir, embedding_function=embedding)
    VectorStore(index_dir, embedding).collection.delete(ids=[f"{(corpus / 'my-notes.txt').as_posix()}#0"])
    model = HashingEmbedding()
    report = build_index([corpus], index_dir, embedding_function=model)
    assert model.embedded == first.chunks and len(report.unchanged) == FILES


def test_another_model_reembeds_everything(corpus, index_dir, embedding):
    first = build_index([corpus], index_dir, embedding_function=embedding)
    other = BlindEmbedding()
    report = build_index([corpus], index_dir, embedding_function=other)
    assert len(report.unchanged) == FILES
    assert other.embedded == report.embedded_chunks == first.chunks
    assert load_manifest(index_dir).embedding == "test-blind"


def test_without_a_model_the_index_is_lexical_and_gains_vectors_later(corpus, index_dir, capsys):
    report = build_index([corpus], index_dir, embedding_function=MissingModel())
    assert not report.vectors and report.embedded_chunks == 0 and len(report.added) == FILES
    assert "lexical only" in report.summary()
    warnings = capsys.readouterr().err.strip().splitlines()
    assert len(warnings) == 1 and "test-missing unavailable" in warnings[0]
    assert open_index(index_dir, MissingModel()).search("e4m3fnuz", k=1, mode="lexical")

    model = HashingEmbedding()
    later = build_index([corpus], index_dir, embedding_function=model)
    assert len(later.unchanged) == FILES and later.vectors and model.embedded == later.chunks


def test_missing_path_and_broken_pdf_are_skipped_the_rest_indexed(corpus, index_dir, embedding, tmp_path, make_pdf):
    (corpus / "broken.pdf").write_bytes(b"%PDF-1.4 truncated")
    (corpus / "paper.pdf").write_bytes(make_pdf(["Persistent kernels loop over tiles"]))
    report = build_index([corpus, tmp_path / "no-such-dir"], index_dir, embedding_function=embedding)
    assert len(report.added) == FILES + 1
    assert len(report.skipped) == 2
    assert any("no-such-dir: no such file or directory" in message for message in report.skipped)
    assert any("broken.pdf: unreadable PDF" in message for message in report.skipped)


def test_file_that_becomes_unreadable_leaves_the_index(corpus, index_dir, embedding, make_pdf):
    paper = corpus / "paper.pdf"
    paper.write_bytes(make_pdf(["Persistent kernels loop over tiles"]))
    build_index([corpus], index_dir, embedding_function=embedding)
    paper.write_bytes(b"%PDF-1.4 overwritten by a failed download")
    report = build_index([corpus], index_dir, embedding_function=embedding)
    assert report.removed == [paper.as_posix()] and "unreadable PDF" in report.skipped[0]
    assert paper.as_posix() not in _vector_paths(index_dir, embedding)


def test_progress_reports_reading_then_embedding(corpus, index_dir, embedding):
    seen = []
    build_index([corpus], index_dir, embedding_function=embedding, progress=lambda *step: seen.append(step))
    assert seen[0] == ("reading", 1, FILES) and seen[FILES - 1] == ("reading", FILES, FILES)
    assert seen[-1][0] == "embedding" and seen[-1][1] == seen[-1][2] == embedding.embedded


def test_an_index_a_lexical_run_built_first_gains_vectors_when_they_are_wanted(corpus, index_dir, embedding, capsys):
    build_index([corpus], index_dir, embed=False)  # what a --retrieval lexical run leaves behind
    index = open_index(index_dir, embedding)  # a later hybrid run
    assert "has no vectors yet; adding them" in capsys.readouterr().err
    assert not index.unembedded and index.search("e4m3fnuz", k=1, mode="vector")
    assert embedding.embedded > 0 and load_manifest(index_dir).roots == [corpus.resolve().as_posix()]
    open_index(index_dir, embedding)
    assert "adding them" not in capsys.readouterr().err  # once per process
