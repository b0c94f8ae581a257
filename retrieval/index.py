"""Build and incrementally update an index: read files, chunk them, embed what changed into Chroma."""

import hashlib
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from retrieval.chunking import chunk_document
from retrieval.config import LITERATURE_DIR, disk_path, display_path, resolve_index_dir
from retrieval.documents import SUPPORTED_SUFFIXES, DocumentError, read_document
from retrieval.manifest import IndexedChunk, IndexedFile, Manifest, load_manifest, save_manifest

Progress = Callable[[str, int, int], None]  # (stage, done, total)
EMBED_BATCH = 128


@dataclass
class BuildReport:
    """What a build did, file by file; `skipped` holds one message per file or path that was not indexed."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    chunks: int = 0
    embedded_chunks: int = 0
    vectors: bool = True

    def summary(self) -> str:
        """One line of counts."""
        files = (
            f"files: {len(self.added)} added, {len(self.updated)} updated, {len(self.unchanged)} unchanged, "
            f"{len(self.removed)} removed, {len(self.skipped)} skipped"
        )
        vectors = f"{self.embedded_chunks} embedded" if self.vectors else "lexical only, no vectors"
        return f"{files}; chunks: {self.chunks} ({vectors})"


def build_index(
    paths: Iterable[str | Path] | None = None,
    index_dir: str | Path | None = None,
    *,
    embedding_function=None,
    progress: Progress | None = None,
    embed: bool = True,
) -> BuildReport:
    """Index `paths` (default: the bundled literature) plus every root indexed before; re-embed only changes.

    A file is re-read when its content hash changed; files gone from disk leave the index. Where the
    embedding model cannot be loaded, or `embed` is False, the index is built for lexical search only;
    a later build with the model adds the vectors.
    """
    directory = resolve_index_dir(index_dir)
    manifest = load_manifest(directory) or Manifest()
    report = BuildReport()
    roots = _roots([Path(p) for p in paths] if paths else [LITERATURE_DIR], manifest, report)
    files = _discover(roots)
    vectors = _vector_store(directory, embedding_function)
    vectors.reconcile(manifest)
    vectors.available = embed

    stale: list[tuple[str, IndexedFile]] = []
    for done, (path, shown) in enumerate(files, start=1):
        if progress:
            progress("reading", done, len(files))
        entry = _index_file(path, shown, manifest, report)
        if entry is not None:
            stale.append((shown, entry))
    report.embedded_chunks = _embed(stale, vectors, progress)
    # Files gone from disk, and files that stopped being readable, must not leave their old text behind.
    for shown in sorted(set(manifest.files) - {*report.added, *report.updated, *report.unchanged}):
        vectors.delete(shown)
        del manifest.files[shown]
        report.removed.append(shown)

    manifest.roots = [display_path(root) for root in roots]
    save_manifest(directory, manifest)
    report.chunks = manifest.chunk_count()
    report.vectors = all(entry.embedded for entry in manifest.files.values())
    return report


class _NoVectors:
    """Stands in for the Chroma store where Chroma is not installed (GPU images): the index is lexical only."""

    available = False

    def reconcile(self, manifest: Manifest) -> None:
        """Nothing to reconcile without vectors."""

    def replace(self, files: list[tuple[str, IndexedFile]], warn) -> int:
        """Mark the files as not embedded; a later build on a machine with Chroma adds their vectors."""
        for _, entry in files:
            entry.embedded = False
        return 0

    def delete(self, shown: str) -> None:
        """Nothing stored, nothing to delete."""


def _vector_store(directory: Path, embedding_function):
    try:
        from retrieval.vectors import VectorStore
    except ImportError as error:
        _warn(f"Chroma unavailable ({error}); indexing for lexical search only")
        return _NoVectors()
    return VectorStore(directory, embedding_function)


def _index_file(path: Path, shown: str, manifest: Manifest, report: BuildReport) -> IndexedFile | None:
    """Update the manifest for one file; the entry whose vectors must be (re)made, or None."""
    old = manifest.files.get(shown)
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if old is not None and old.hash == digest:
            report.unchanged.append(shown)
            return None if old.embedded else old
        entry = _read(path, shown, digest)
    except (DocumentError, OSError) as error:
        message = str(error) if isinstance(error, DocumentError) else f"{shown}: cannot read ({error.strerror})"
        report.skipped.append(message)
        return None
    manifest.files[shown] = entry
    (report.updated if old is not None else report.added).append(shown)
    return entry


def _embed(stale: list[tuple[str, IndexedFile]], vectors, progress: Progress | None) -> int:
    """Re-embed files in batches of about EMBED_BATCH chunks: the model runs far faster on full batches."""
    total = sum(len(entry.chunks) for _, entry in stale)
    embedded, done, batch = 0, 0, []
    for position, (shown, entry) in enumerate(stale):
        batch.append((shown, entry))
        size = sum(len(e.chunks) for _, e in batch)
        if size >= EMBED_BATCH or position == len(stale) - 1:
            embedded += vectors.replace(batch, _warn)
            done += size
            batch = []
            if progress:
                progress("embedding", done, total)
    return embedded


def _read(path: Path, shown: str, digest: str) -> IndexedFile:
    document = read_document(path, shown)
    chunks = [IndexedChunk(id=f"{shown}#{c.ordinal}", section=c.section, text=c.text) for c in chunk_document(document)]
    return IndexedFile(
        hash=digest,
        title=document.title,
        architectures=list(document.architectures),
        topics=list(document.topics),
        sources=list(document.sources),
        chunks=chunks,
    )


def _roots(given: list[Path], manifest: Manifest, report: BuildReport) -> list[Path]:
    """Given paths that exist, then earlier roots still on disk (a root that vanished takes its files along)."""
    roots: list[Path] = []
    for path in given:
        if not path.exists():
            report.skipped.append(f"{path}: no such file or directory")
        elif path.is_file() and path.suffix.lower() not in SUPPORTED_SUFFIXES:
            report.skipped.append(f"{path}: unsupported file type {path.suffix or '(none)'}")
        else:
            roots.append(path.resolve())
    roots += [disk_path(shown).resolve() for shown in manifest.roots if disk_path(shown).exists()]
    return list(dict.fromkeys(roots))


def _discover(roots: list[Path]) -> list[tuple[Path, str]]:
    """Supported files under the roots, each once, in a stable order; hidden directories are not entered."""
    found: dict[str, Path] = {}
    for root in roots:
        if root.is_file():
            found.setdefault(display_path(root), root)
            continue
        for path in sorted(root.rglob("*")):
            hidden = any(part.startswith(".") for part in path.relative_to(root).parts)
            if path.is_file() and not hidden and path.suffix.lower() in SUPPORTED_SUFFIXES:
                found.setdefault(display_path(path), path)
    return [(path, shown) for shown, path in sorted(found.items())]


def _warn(message: str) -> None:
    print(f"retrieval: {message}", file=sys.stderr)
