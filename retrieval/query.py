"""Search an index: BM25 and vector rankings fused by reciprocal rank, filtered by architecture and topic."""

import importlib.util
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from pydantic import BaseModel

from retrieval.chunking import context_text
from retrieval.config import LITERATURE_DIR, disk_path, resolve_index_dir
from retrieval.lexical import BM25
from retrieval.manifest import Manifest, load_manifest, manifest_path

MODES = ("hybrid", "vector", "lexical")
FILTER_KEYS = ("arch", "topic")
# Each ranking contributes its top CANDIDATES; RRF_K damps the head so one ranking cannot dominate
# (60 is the constant of Cormack et al.'s reciprocal rank fusion).
CANDIDATES = 50
RRF_K = 60


class Passage(BaseModel):
    """A retrieved chunk: `source` names note, section and file for citation; metadata["sources"] its references.

    `score` orders passages within one search: fused reciprocal rank (hybrid), cosine similarity (vector)
    or BM25 (lexical); metadata also gives each passage's `vector_rank` and `lexical_rank` where it had one.
    """

    text: str
    source: str
    score: float
    metadata: dict


@dataclass(frozen=True)
class _Record:
    id: str
    path: str
    title: str
    section: str
    text: str
    architectures: tuple[str, ...]
    topics: tuple[str, ...]
    sources: tuple[str, ...]

    def matches(self, filters: dict[str, tuple[str, ...]]) -> bool:
        # A document without architectures is about none in particular, so an arch filter keeps it.
        arch = filters.get("arch")
        if arch and self.architectures and not set(arch) & set(self.architectures):
            return False
        topic = filters.get("topic")
        return not topic or bool(set(topic) & set(self.topics))


class LoadedIndex:
    """An index opened for searching; BM25 and the vector store are built on first use and then kept."""

    def __init__(self, directory: Path, manifest: Manifest, embedding_function=None) -> None:
        self.directory = directory
        self.embedding_function = embedding_function
        self.records = [
            _Record(
                id=chunk.id,
                path=path,
                title=entry.title,
                section=chunk.section,
                text=chunk.text,
                architectures=tuple(entry.architectures),
                topics=tuple(entry.topics),
                sources=tuple(entry.sources),
            )
            for path, entry in manifest.files.items()
            for chunk in entry.chunks
        ]
        self.position = {record.id: n for n, record in enumerate(self.records)}
        self.built_with = manifest.embedding
        self.file_count = len(manifest.files)
        self.unembedded = sorted(path for path, entry in manifest.files.items() if not entry.embedded)
        self._vectors = None

    @cached_property
    def bm25(self) -> BM25:
        return BM25([context_text(r.title, r.section, r.text) for r in self.records])

    def vectors(self):
        """The vector store (imports Chroma on first use)."""
        if self._vectors is None:
            from retrieval.vectors import VectorStore

            self._vectors = VectorStore(self.directory, self.embedding_function)
        return self._vectors

    def search(self, query: str, k: int = 5, filters: dict | None = None, mode: str = "hybrid") -> list[Passage]:
        """The top `k` passages for a query; falls back to lexical, saying so once, where vectors are unavailable."""
        if not query.strip():
            raise ValueError("query is empty")
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")
        wanted = _normalize_filters(filters)
        allowed = [n for n, record in enumerate(self.records) if record.matches(wanted)]
        rankings: dict[str, list[tuple[int, float]]] = {}
        if mode != "lexical":
            vector = self._vector_ranking(query, allowed if wanted else None)
            if vector is None:
                mode = "lexical"
            else:
                rankings["vector"] = vector
        if mode != "vector":
            rankings["lexical"] = self._lexical_ranking(query, set(allowed))
        if mode == "hybrid":
            return self._passages(fuse(list(rankings.values()))[:k], rankings)
        return self._passages(rankings[mode][:k], rankings)

    def _lexical_ranking(self, query: str, allowed: set[int]) -> list[tuple[int, float]]:
        scores = self.bm25.scores(query)
        ranked = sorted(((n, s) for n, s in scores.items() if n in allowed), key=lambda item: (-item[1], item[0]))
        return ranked[:CANDIDATES]

    def _vector_ranking(self, query: str, allowed: list[int] | None) -> list[tuple[int, float]] | None:
        if self.unembedded and len(self.unembedded) == self.file_count:
            warn_once(f"index at {self.directory} has no vectors; searching lexically (retrieval.build adds them)")
            return None
        try:
            from retrieval.embedding import EmbeddingUnavailable, MiniLMEmbedding
        except ImportError as error:  # no Chroma on this machine (e.g. a GPU image): lexical only
            warn_once(f"vector search unavailable ({error}); searching lexically")
            return None
        model = (self.embedding_function or MiniLMEmbedding()).name()
        if self.built_with != model:
            warn_once(f"index at {self.directory} was built with {self.built_with}, not {model}; searching lexically")
            return None
        if self.unembedded:
            warn_once(f"{len(self.unembedded)} indexed files have no vectors yet; run python -m retrieval.build")
        try:
            ids = None if allowed is None else [self.records[n].id for n in allowed]
            nearest = self.vectors().nearest(query, CANDIDATES, ids)
        except EmbeddingUnavailable as error:
            warn_once(f"{error}; searching lexically")
            return None
        return [(self.position[chunk_id], score) for chunk_id, score in nearest if chunk_id in self.position]

    def _passages(self, ranked: list[tuple[int, float]], rankings: dict) -> list[Passage]:
        ranks = {name: {n: rank for rank, (n, _) in enumerate(ranking, start=1)} for name, ranking in rankings.items()}
        passages = []
        for n, score in ranked:
            record = self.records[n]
            metadata = {
                "id": record.id,
                "path": record.path,
                "title": record.title,
                "section": record.section,
                "architectures": list(record.architectures),
                "topics": list(record.topics),
                "sources": list(record.sources),
                **{f"{name}_rank": by_position[n] for name, by_position in ranks.items() if n in by_position},
            }
            passages.append(Passage(text=record.text, source=cite(record), score=score, metadata=metadata))
        return passages


def fuse(rankings: list[list[tuple[int, float]]], k: int = RRF_K) -> list[tuple[int, float]]:
    """Reciprocal rank fusion: each item scores the sum of 1/(k + rank) over the rankings it appears in."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, (item, _) in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(fused.items(), key=lambda pair: (-pair[1], pair[0]))


def cite(record: _Record) -> str:
    """How a passage is cited: note title, section, file."""
    heading = f"{record.title} > {record.section}" if record.section else record.title
    return f"{heading} ({record.path})"


def _normalize_filters(filters: dict | None) -> dict[str, tuple[str, ...]]:
    normalized = {}
    for key, value in (filters or {}).items():
        if key not in FILTER_KEYS:
            raise ValueError(f"unknown filter {key!r}; use {' or '.join(FILTER_KEYS)}")
        values = [value] if isinstance(value, str) else list(value or [])
        if values:
            normalized[key] = tuple(str(v).strip().lower() for v in values)
    return normalized


_warned: set[str] = set()


def warn_once(message: str) -> None:
    """One line on stderr, once per process."""
    if message not in _warned:
        _warned.add(message)
        print(f"retrieval: {message}", file=sys.stderr)


_open: dict[Path, tuple[int, LoadedIndex]] = {}


def open_index(index_dir: str | Path | None = None, embedding_function=None, *, embed: bool = True) -> LoadedIndex:
    """The index at `index_dir`, loaded once per process and reloaded when a build rewrote it.

    An index that does not exist yet is built from the bundled literature first; without vectors when
    `embed` is False, so lexical search never loads the model. An index a lexical run built first gets its
    vectors the first time a process wants them (once per process: a machine without the model stays lexical).
    """
    from retrieval.index import build_index

    directory = resolve_index_dir(index_dir).resolve()
    manifest_file = manifest_path(directory)
    if not manifest_file.exists():
        print(f"retrieval: no index at {directory}; building it from {LITERATURE_DIR} first", file=sys.stderr)
        report = build_index(index_dir=directory, embedding_function=embedding_function, embed=embed)
        print(f"retrieval: {report.summary()}", file=sys.stderr)
    elif embed and directory not in _open and _lacks_vectors(manifest := load_manifest(directory)):
        roots = [disk_path(root) for root in manifest.roots]
        print(f"retrieval: the index at {directory} has no vectors yet; adding them", file=sys.stderr)
        report = build_index(roots, directory, embedding_function=embedding_function)
        print(f"retrieval: {report.summary()}", file=sys.stderr)
    stamp = manifest_file.stat().st_mtime_ns
    cached = _open.get(directory)
    if cached is None or cached[0] != stamp or cached[1].embedding_function is not embedding_function:
        cached = (stamp, LoadedIndex(directory, load_manifest(directory), embedding_function))
        _open[directory] = cached
    return cached[1]


def _lacks_vectors(manifest: Manifest | None) -> bool:
    """No indexed file has vectors, and Chroma is installed to hold them."""
    has_chroma = importlib.util.find_spec("chromadb") is not None
    return has_chroma and manifest is not None and not any(entry.embedded for entry in manifest.files.values())


def search(
    query: str,
    k: int = 5,
    filters: dict | None = None,
    *,
    mode: str = "hybrid",
    index_dir: str | Path | None = None,
) -> list[Passage]:
    """The `k` passages most relevant to `query`; `filters` may hold "arch" and "topic" (a value or a list)."""
    return open_index(index_dir, embed=mode != "lexical").search(query, k, filters, mode)
