"""BM25 over chunks, with a tokenizer that keeps GPU terms such as e4m3fnuz, gfx942 and waves_per_eu whole."""

import math
import re
from collections import Counter, defaultdict

# Compound terms: identifiers, versions and dtype names (v_mfma_f32_32x32x8_f16, tl.dot, sm_90a, mi300x).
_TERM = re.compile(r"[a-z0-9]+(?:[._\-/][a-z0-9]+)*")
_PART = re.compile(r"[a-z]+|[0-9]+")
_STOP_WORDS = frozenset(
    "a an and are as at be by can do does for from has have how i in is it its of on or so that the their this "
    "to was what when where which why with you your".split()
)


def tokenize(text: str) -> list[str]:
    """Index terms of a text: each compound term, its pieces, and letter/digit runs of each piece.

    "e4m3fnuz" yields e4m3fnuz and fnuz, so a query for the whole term matches it exactly (and strongly,
    being rare), while "MI300" still meets the "mi" and "300" of "MI300X".
    """
    tokens: list[str] = []
    for term in _TERM.findall(text.lower()):
        pieces = re.split(r"[._\-/]", term)
        variants = [term, *pieces] if len(pieces) > 1 else [term]
        for piece in pieces:
            runs = _PART.findall(piece)
            if len(runs) > 1:
                variants.extend(runs)
        for n, variant in enumerate(variants):
            # Single letters and digits split off a term ("e", "4") would match nearly every chunk.
            if variant not in _STOP_WORDS and (n == 0 or len(variant) > 1):
                tokens.append(_stem(variant))
    return tokens


def _stem(token: str) -> str:
    # Plural folding only ("banks" ~ "bank"); anything stronger mangles identifiers.
    if len(token) > 3 and token.isalpha() and token.endswith("s") and not token.endswith("ss"):
        return token[:-1]
    return token


class BM25:
    """Okapi BM25 over a fixed list of texts."""

    def __init__(self, texts: list[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self._lengths = []
        for index, text in enumerate(texts):
            counts = Counter(tokenize(text))
            self._lengths.append(sum(counts.values()))
            for term, count in counts.items():
                self._postings[term].append((index, count))
        self._average_length = (sum(self._lengths) / len(self._lengths)) if self._lengths else 0.0

    def scores(self, query: str) -> dict[int, float]:
        """Each matching text's score for the query, by position; texts matching no term are absent."""
        total = len(self._lengths)
        scores: dict[int, float] = defaultdict(float)
        for term in set(tokenize(query)):
            postings = self._postings.get(term)
            if not postings:
                continue
            idf = math.log(1 + (total - len(postings) + 0.5) / (len(postings) + 0.5))
            for index, count in postings:
                norm = self.k1 * (1 - self.b + self.b * self._lengths[index] / self._average_length)
                scores[index] += idf * count * (self.k1 + 1) / (count + norm)
        return dict(scores)
