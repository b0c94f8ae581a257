"""Where the index lives and where the bundled literature is."""

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
LITERATURE_DIR = REPO_ROOT / "literature"
INDEX_DIR_ENV = "KS_INDEX_DIR"


def default_index_dir() -> Path:
    """The index directory: $KS_INDEX_DIR, else ~/.cache/kernel-scientist/index."""
    configured = os.environ.get(INDEX_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "kernel-scientist" / "index"


def resolve_index_dir(index_dir: str | Path | None) -> Path:
    """An explicit index directory, or the default one."""
    return Path(index_dir).expanduser() if index_dir is not None else default_index_dir()


def display_path(path: Path) -> str:
    """A file's name in the index: relative to the repository when inside it, so citations stay portable."""
    resolved = path.resolve()
    try:
        return resolved.relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return resolved.as_posix()


def disk_path(shown: str) -> Path:
    """The file on disk for a name written by `display_path`."""
    path = Path(shown)
    return path if path.is_absolute() else REPO_ROOT / path
