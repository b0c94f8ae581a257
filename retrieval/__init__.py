"""Chunk, embed and index the literature in Chroma; hybrid search with citations.

`search(query, k, filters, mode=..., index_dir=...)` is the API the agents call; `build_index` (re)builds an index.
"""

from retrieval.index import BuildReport, build_index
from retrieval.query import Passage, search

__all__ = ["BuildReport", "Passage", "build_index", "search"]
