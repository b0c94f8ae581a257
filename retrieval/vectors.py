"""The Chroma side of an index: one persistent collection of chunk vectors, kept in step with the manifest."""

from collections.abc import Callable
from pathlib import Path

from retrieval.chunking import context_text
from retrieval.embedding import EmbeddingUnavailable, MiniLMEmbedding
from retrieval.manifest import IndexedFile, Manifest

COLLECTION_NAME = "literature"
_clients: dict[str, object] = {}


def _client(index_dir: Path):
    """One PersistentClient per index directory and process."""
    import chromadb
    from chromadb.config import Settings

    key = str(index_dir.resolve())
    if key not in _clients:
        settings = Settings(anonymized_telemetry=False)
        _clients[key] = chromadb.PersistentClient(path=str(index_dir / "chroma"), settings=settings)
    return _clients[key]


class VectorStore:
    """Chunk vectors in Chroma under the chunk ids of the manifest; the embedding function is ours, not Chroma's."""

    def __init__(self, index_dir: Path, embedding_function=None) -> None:
        self.embedding_function = embedding_function or MiniLMEmbedding()
        self.available = True
        self._client = _client(index_dir)
        self._collection = None

    @property
    def collection(self):
        """The chunk collection, created on first use."""
        if self._collection is None:
            self._collection = self._client.get_or_create_collection(
                COLLECTION_NAME,
                embedding_function=self.embedding_function,
                configuration={"hnsw": {"space": "cosine"}},
            )
        return self._collection

    def reconcile(self, manifest: Manifest) -> None:
        """Start over when the vectors were made by another model or do not match the manifest."""
        name = self.embedding_function.name()
        # Chroma refuses to open a collection under another model's name, so compare before opening.
        stale = manifest.embedding != name
        if not stale:
            expected = sum(len(entry.chunks) for entry in manifest.files.values() if entry.embedded)
            stale = self.collection.count() != expected
        if stale:
            if COLLECTION_NAME in {collection.name for collection in self._client.list_collections()}:
                self._client.delete_collection(COLLECTION_NAME)
            self._collection = None
            for entry in manifest.files.values():
                entry.embedded = False
        manifest.embedding = name

    def replace(self, files: list[tuple[str, IndexedFile]], warn: Callable[[str], None]) -> int:
        """Replace the vectors of each (name, entry) with the entry's; the chunks embedded (0 without a model)."""
        for shown, entry in files:
            self.delete(shown)
            entry.embedded = False
        chunks = [(shown, entry, chunk) for shown, entry in files for chunk in entry.chunks]
        if not self.available:
            return 0
        if chunks:
            try:
                embeddings = self.embedding_function([context_text(e.title, c.section, c.text) for _, e, c in chunks])
            except EmbeddingUnavailable as error:
                self.available = False
                warn(f"{error}; indexing for lexical search only")
                return 0
            self.collection.add(
                ids=[chunk.id for _, _, chunk in chunks],
                embeddings=embeddings,
                documents=[chunk.text for _, _, chunk in chunks],
                metadatas=[_metadata(shown, entry, chunk.section) for shown, entry, chunk in chunks],
            )
        for _, entry in files:
            entry.embedded = True
        return len(chunks)

    def delete(self, shown: str) -> None:
        """Remove every vector of one file."""
        self.collection.delete(where={"path": shown})

    def nearest(self, query: str, n: int, ids: list[str] | None = None) -> list[tuple[str, float]]:
        """(chunk id, cosine similarity) of the `n` chunks nearest the query, optionally among `ids` only."""
        limit = min(n, len(ids) if ids is not None else self.collection.count())
        if limit <= 0:
            return []
        query_embedding = self.embedding_function.embed_query([query])
        result = self.collection.query(
            query_embeddings=query_embedding, n_results=limit, ids=ids, include=["distances"]
        )
        pairs = zip(result["ids"][0], result["distances"][0], strict=True)
        return [(chunk_id, 1.0 - distance) for chunk_id, distance in pairs]


def _metadata(shown: str, entry: IndexedFile, section: str) -> dict:
    metadata = {"path": shown, "title": entry.title, "section": section, "hash": entry.hash}
    # Chroma rejects empty lists; labels are filtered through the manifest anyway.
    if entry.architectures:
        metadata["architectures"] = entry.architectures
    if entry.topics:
        metadata["topics"] = entry.topics
    return metadata
