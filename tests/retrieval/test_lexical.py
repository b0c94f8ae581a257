"""The BM25 side: tokenizing GPU terms and ranking exact matches."""

from retrieval.lexical import BM25, tokenize


def test_compound_terms_stay_whole_and_also_yield_their_parts():
    tokens = tokenize("Set waves_per_eu for gfx942; the dtype is e4m3fnuz.")
    assert {"waves_per_eu", "wave", "per", "eu"} <= set(tokens)
    assert {"gfx942", "gfx", "942"} <= set(tokens)
    assert {"e4m3fnuz", "fnuz"} <= set(tokens)
    # Single letters and digits split off a term would match almost anything.
    assert not {"e", "4", "m", "3"} & set(tokens)


def test_stop_words_dropped_and_plurals_folded():
    assert tokenize("How many banks does the LDS have") == ["many", "bank", "lds"]
    # Identifiers are not stemmed: only plain words lose a plural "s".
    assert tokenize("ds_read_b128s class") == ["ds_read_b128s", "ds", "read", "b128s", "128", "class"]


def test_rare_exact_term_outranks_common_words():
    texts = [
        "fp8 formats: the largest e4m3fnuz value is 240",
        "fp8 formats and fp8 scaling and fp8 gemm on many GPUs",
        "LDS banks and padding",
    ]
    scores = BM25(texts).scores("max value of e4m3fnuz fp8")
    assert max(scores, key=scores.get) == 0
    assert 2 not in scores


def test_no_matching_term_gives_no_scores():
    assert BM25(["alpha beta"]).scores("gamma") == {}
    assert BM25([]).scores("gamma") == {}
