"""Chunk, embed and index the literature in Chroma; hybrid search with citations."""
