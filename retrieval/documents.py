"""Read Markdown, text, HTML and PDF files into documents with Markdown-style headings and note metadata."""

import logging
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import yaml

SUPPORTED_SUFFIXES = {".md", ".markdown", ".txt", ".text", ".html", ".htm", ".pdf"}


class DocumentError(Exception):
    """A file that cannot be read into a document; the message names the file."""


@dataclass(frozen=True)
class Document:
    """One source file as Markdown-style text plus the metadata every chunk of it carries."""

    path: str
    title: str
    text: str
    architectures: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    sources: tuple[str, ...] = field(default=())


def read_document(path: Path, shown: str) -> Document:
    """Read one file; `shown` is the name it is indexed and cited under."""
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise DocumentError(f"{shown}: unsupported file type {suffix or '(none)'}")
    if suffix == ".pdf":
        return _read_pdf(path, shown)
    try:
        raw = path.read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise DocumentError(f"{shown}: cannot read ({error.strerror or error})") from error
    if suffix in {".html", ".htm"}:
        return _read_html(raw, path, shown)
    if suffix in {".txt", ".text"}:
        return Document(path=shown, title=path.stem, text=raw)
    return _read_markdown(raw, path, shown)


def _read_markdown(raw: str, path: Path, shown: str) -> Document:
    front, body = split_front_matter(raw, shown)
    title = str(front.get("title") or _first_h1(body) or path.stem)
    return Document(
        path=shown,
        title=title,
        text=body,
        architectures=_labels(front.get("architectures")),
        topics=_labels(front.get("topics")),
        sources=tuple(_source_text(item) for item in _as_list(front.get("sources"))),
    )


def split_front_matter(raw: str, shown: str) -> tuple[dict, str]:
    """The YAML front matter (empty when absent) and the Markdown body after it."""
    if not raw.startswith("---"):
        return {}, raw
    lines = raw.splitlines(keepends=True)
    end = next((n for n, line in enumerate(lines[1:], start=1) if line.strip() == "---"), None)
    if end is None:
        return {}, raw
    try:
        front = yaml.safe_load("".join(lines[1:end])) or {}
    except yaml.YAMLError as error:
        raise DocumentError(f"{shown}: front matter is not valid YAML ({error.__class__.__name__})") from error
    if not isinstance(front, dict):
        raise DocumentError(f"{shown}: front matter must be a YAML mapping")
    return front, "".join(lines[end + 1 :])


def _first_h1(body: str) -> str | None:
    for line in body.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return None


def _as_list(value) -> list:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _labels(value) -> tuple[str, ...]:
    # Lower-cased so that filters match however a note spells "CDNA3" or "cdna3".
    return tuple(str(item).strip().lower() for item in _as_list(value) if str(item).strip())


def _source_text(item) -> str:
    if isinstance(item, dict):
        return " ".join(str(value) for value in item.values() if value)
    return str(item)


def _read_pdf(path: Path, shown: str) -> Document:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    # pypdf logs every repair it attempts; the one-line error below is what the user needs.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = PdfReader(path)
        pages = [page.extract_text() or "" for page in reader.pages]
        info_title = (reader.metadata or {}).get("/Title")
    except (PyPdfError, OSError, ValueError, KeyError, TypeError) as error:
        raise DocumentError(f"{shown}: unreadable PDF ({error.__class__.__name__}: {error})") from error
    if not any(page.strip() for page in pages):
        raise DocumentError(f"{shown}: PDF has no extractable text")
    # Pages become sections, so a citation can say which page a passage came from.
    text = "\n\n".join(f"## page {number}\n{page}" for number, page in enumerate(pages, start=1) if page.strip())
    return Document(path=shown, title=str(info_title or path.stem), text=text)


def _read_html(raw: str, path: Path, shown: str) -> Document:
    parser = _HtmlToMarkdown()
    parser.feed(raw)
    parser.close()
    return Document(path=shown, title=parser.title or _first_h1(parser.markdown) or path.stem, text=parser.markdown)


class _HtmlToMarkdown(HTMLParser):
    """Keep an HTML page's headings and text blocks; drop scripts, styles and navigation."""

    _SKIPPED = {"script", "style", "nav", "header", "footer", "noscript", "svg"}
    _BLOCKS = {"p", "div", "li", "pre", "br", "tr", "section", "article", "blockquote", "table"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title = ""
        self._parts: list[str] = []
        self._skipping = 0
        self._in_title = False

    @property
    def markdown(self) -> str:
        return "".join(self._parts)

    def handle_starttag(self, tag, attrs):
        if tag in self._SKIPPED:
            self._skipping += 1
        elif tag == "title":
            self._in_title = True
        elif tag in {"h1", "h2", "h3", "h4", "h5", "h6"}:
            self._parts.append("\n\n" + "#" * int(tag[1]) + " ")
        elif tag in self._BLOCKS:
            self._parts.append("\n\n" if tag != "li" else "\n- ")

    def handle_endtag(self, tag):
        if tag in self._SKIPPED:
            self._skipping = max(0, self._skipping - 1)
        elif tag == "title":
            self._in_title = False
        elif tag in {"h1", "h2", "h3", "h4", "h5", "h6"}:
            self._parts.append("\n\n")

    def handle_data(self, data):
        if self._in_title:
            self.title += data.strip()
        elif not self._skipping:
            # Collapse the source's line wrapping inside a block; blocks are separated by the tags above.
            words = " ".join(data.split())
            lead = " " if data[:1].isspace() and words else ""
            self._parts.append(lead + words + (" " if data[-1:].isspace() else ""))
