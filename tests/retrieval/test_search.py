"""Searching: passages with citations, filters, reciprocal rank fusion, and the lexical fallback."""

import pytest

from retrieval import index as index_module
from retrieval.index import build_index
from retrieval.query import fuse, open_index
from tests.retrieval.fakes import BlindEmbedding, HashingEmbedding, MissingModel


@pytest.fixture
def built(corpus, index_dir, embedding):
    build_index([corpus], index_dir, embedding_function=embedding)
    return open_index(index_dir, embedding)


def _names(passages) -> list[str]:
    return [passage.metadata["path"].rsplit("/", 1)[-1] for passage in passages]


def test_passage_cites_note_section_file_and_the_notes_sources(built, corpus):
    [passage] = built.search("which lanes serialize on a bank conflict", k=1, mode="lexical")
    note = (corpus / "cdna3" / "lds-banks.md").as_posix()
    assert passage.source == f"LDS on CDNA3: capacity and banks > Banks and conflicts ({note})"
    assert passage.text.startswith("The local data share is split into 32 banks")
    assert passage.metadata["sources"] == ["Fixture source: CDNA3 ISA guide, LDS chapter"]
    assert passage.metadata["architectures"] == ["cdna3"] and passage.score > 0


@pytest.mark.parametrize("mode", ["hybrid", "vector", "lexical"])
def test_every_mode_finds_a_plain_question(built, mode):
    assert _names(built.search("warpgroup asynchronous matrix multiply", k=1, mode=mode)) == ["wgmma.md"]


def test_arch_filter_keeps_that_arch_and_arch_agnostic_files(built):
    for mode in ("hybrid", "vector", "lexical"):
        names = set(_names(built.search("memory tiles compute units", k=10, filters={"arch": "HOPPER"}, mode=mode)))
        assert names <= {"wgmma.md", "tiling.md", "my-notes.txt"}
        assert "tiling.md" in names


def test_topic_filter_and_lists_of_values(built):
    assert set(_names(built.search("formats and tiles", k=10, filters={"topic": "fp8"}))) == {"fp8-formats.md"}
    both = built.search("formats and tiles", k=10, filters={"topic": ["fp8", "tiling"], "arch": "cdna3"})
    assert set(_names(both)) == {"fp8-formats.md", "tiling.md"}


def test_fusion_rewards_agreement_between_rankings():
    vector = [(1, 0.9), (2, 0.8), (3, 0.7), (4, 0.6)]
    lexical = [(4, 12.0), (2, 5.0)]
    fused = fuse([vector, lexical])
    assert [item for item, _ in fused] == [2, 4, 1, 3]
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 62)


def test_exact_term_the_model_cannot_see_is_found_by_hybrid(corpus, index_dir):
    # To a model that cannot see the term, the query is almost empty and a short stub note is nearest.
    (corpus / "stub.md").write_text("# Stub\n\nTodo.\n")
    blind = BlindEmbedding()
    build_index([corpus], index_dir, embedding_function=blind)
    index = open_index(index_dir, blind)
    assert _names(index.search("e4m3fnuz", k=10, mode="vector")).index("fp8-formats.md") > 0
    [hit] = index.search("e4m3fnuz", k=1, mode="hybrid")
    assert _names([hit]) == ["fp8-formats.md"]
    assert hit.metadata["lexical_rank"] == 1 and hit.metadata["vector_rank"] > 1


def test_unloadable_model_falls_back_to_lexical_with_one_line(corpus, index_dir, capsys):
    build_index([corpus], index_dir, embedding_function=HashingEmbedding())
    index = open_index(index_dir, MissingModel())
    capsys.readouterr()
    for _ in range(3):
        assert _names(index.search("e4m3fnuz", k=1)) == ["fp8-formats.md"]
    # The index was built by another model, so the vectors are not used at all.
    warning = capsys.readouterr().err.strip().splitlines()
    assert len(warning) == 1 and "searching lexically" in warning[0]


def test_lexical_index_falls_back_even_for_vector_mode(corpus, index_dir, capsys):
    build_index([corpus], index_dir, embedding_function=MissingModel())
    capsys.readouterr()
    hits = open_index(index_dir, MissingModel()).search("e4m3fnuz", k=1, mode="vector")
    assert _names(hits) == ["fp8-formats.md"] and "lexical_rank" in hits[0].metadata
    assert "has no vectors; searching lexically" in capsys.readouterr().err


def test_missing_index_is_built_first(monkeypatch, corpus, index_dir, capsys):
    monkeypatch.setattr(index_module, "LITERATURE_DIR", corpus)
    index = open_index(index_dir, HashingEmbedding())
    assert "building it" in capsys.readouterr().err
    assert _names(index.search("e4m3fnuz", k=1)) == ["fp8-formats.md"]


def test_lexical_search_builds_a_missing_index_without_the_model(monkeypatch, corpus, index_dir, capsys):
    monkeypatch.setattr(index_module, "LITERATURE_DIR", corpus)
    model = HashingEmbedding()
    index = open_index(index_dir, model, embed=False)
    assert "lexical only" in capsys.readouterr().err and model.embedded == 0
    assert _names(index.search("e4m3fnuz", k=1, mode="lexical")) == ["fp8-formats.md"]
    # A later build with the model adds the vectors without re-reading anything.
    report = build_index([corpus], index_dir, embedding_function=model)
    assert len(report.unchanged) == 5 and model.embedded == report.chunks and report.vectors


def test_index_reloads_after_a_rebuild(built, corpus, index_dir, embedding):
    (corpus / "techniques" / "atomics.md").write_text("# Atomics\n\nAtomic adds on fp32 serialize per address.\n")
    build_index([corpus], index_dir, embedding_function=embedding)
    assert _names(open_index(index_dir, embedding).search("atomic adds", k=1)) == ["atomics.md"]


@pytest.mark.parametrize(
    ("query", "k", "filters", "mode", "message"),
    [
        ("  ", 5, None, "hybrid", "query is empty"),
        ("lds", 0, None, "hybrid", "k must be at least 1"),
        ("lds", 5, {"vendor": "amd"}, "hybrid", "unknown filter 'vendor'"),
        ("lds", 5, None, "semantic", "unknown mode 'semantic'"),
    ],
)
def test_bad_arguments_raise_clear_errors(built, query, k, filters, mode, message):
    with pytest.raises(ValueError, match=message):
        built.search(query, k, filters, mode)
