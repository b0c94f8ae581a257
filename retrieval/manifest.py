"""The index's manifest: indexed roots, each file's content hash, metadata and chunks (the lexical side's data)."""

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

MANIFEST_NAME = "manifest.json"
FORMAT = 1


@dataclass
class IndexedChunk:
    """One chunk as stored: Chroma holds its vector under the same id."""

    id: str
    section: str
    text: str


@dataclass
class IndexedFile:
    """One indexed file: its hash decides whether it is re-read; `embedded` whether Chroma has its vectors."""

    hash: str
    title: str
    architectures: list[str]
    topics: list[str]
    sources: list[str]
    chunks: list[IndexedChunk]
    embedded: bool = False


@dataclass
class Manifest:
    """Everything an index knows besides its vectors."""

    roots: list[str] = field(default_factory=list)
    files: dict[str, IndexedFile] = field(default_factory=dict)
    embedding: str | None = None

    def chunk_count(self) -> int:
        """Chunks across all files."""
        return sum(len(entry.chunks) for entry in self.files.values())


class ManifestError(Exception):
    """A manifest that cannot be read; the message names the file."""


def manifest_path(index_dir: Path) -> Path:
    """Where an index directory keeps its manifest."""
    return index_dir / MANIFEST_NAME


def load_manifest(index_dir: Path) -> Manifest | None:
    """The manifest of an index directory, or None where no index was built yet."""
    path = manifest_path(index_dir)
    if not path.exists():
        return None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if raw.get("format") != FORMAT:
            raise ManifestError(f"{path}: index format {raw.get('format')!r}, expected {FORMAT}; rebuild it")
        files = {
            name: IndexedFile(**{**entry, "chunks": [IndexedChunk(**chunk) for chunk in entry["chunks"]]})
            for name, entry in raw["files"].items()
        }
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ManifestError(f"{path}: unreadable index manifest ({error.__class__.__name__}); rebuild it") from error
    return Manifest(roots=list(raw.get("roots", [])), files=files, embedding=raw.get("embedding"))


def save_manifest(index_dir: Path, manifest: Manifest) -> None:
    """Write the manifest atomically, so a reader never sees half of it."""
    index_dir.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": FORMAT,
        "embedding": manifest.embedding,
        "roots": manifest.roots,
        "files": {name: asdict(entry) for name, entry in sorted(manifest.files.items())},
    }
    path = manifest_path(index_dir)
    temporary = path.with_suffix(f".tmp{os.getpid()}")
    temporary.write_text(json.dumps(payload, ensure_ascii=False), encoding="utf-8")
    os.replace(temporary, path)
