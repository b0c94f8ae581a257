"""Split a document into heading-aware chunks small enough for the embedding model."""

import re
from dataclasses import dataclass

from retrieval.documents import Document

# all-MiniLM-L6-v2 truncates at 256 word pieces; technical prose runs about 4 characters a piece,
# and the title and section line are embedded with the text.
MAX_CHARS = 900

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+")


@dataclass(frozen=True)
class Chunk:
    """A piece of one section: its heading path ("A > B"), its text and its position in the document."""

    section: str
    text: str
    ordinal: int


def chunk_document(document: Document, max_chars: int = MAX_CHARS) -> list[Chunk]:
    """Chunks of a document, one or more per non-empty section, none longer than `max_chars`."""
    pieces = [(section, piece) for section, body in _sections(document) for piece in _split_body(body, max_chars)]
    return [Chunk(section=section, text=text, ordinal=n) for n, (section, text) in enumerate(pieces)]


def context_text(title: str, section: str, text: str) -> str:
    """The text that is embedded and indexed: title and section give a short passage its context."""
    heading = f"{title} > {section}" if section else title
    return f"{heading}\n{text}"


def _sections(document: Document) -> list[tuple[str, str]]:
    """(heading path, body) for each section, in order; the title's own H1 is left out of paths."""
    stack: list[tuple[int, str]] = []
    sections: list[tuple[str, list[str]]] = [("", [])]
    in_fence = False
    for line in document.text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        heading = None if in_fence else _HEADING.match(line)
        if heading is None:
            sections[-1][1].append(line)
            continue
        level, name = len(heading.group(1)), heading.group(2).strip()
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, name))
        path = " > ".join(text for depth, text in stack if not (depth == 1 and _same(text, document.title)))
        sections.append((path, []))
    return [(path, "\n".join(lines).strip()) for path, lines in sections if "\n".join(lines).strip()]


def _same(a: str, b: str) -> bool:
    return a.strip().lower() == b.strip().lower()


def _split_body(body: str, max_chars: int) -> list[str]:
    """Pack paragraphs into pieces of at most `max_chars`; split oversized paragraphs by sentence, then word."""
    if len(body) <= max_chars:
        return [body]
    units = [unit for paragraph in _paragraphs(body) for unit in _fit(paragraph, max_chars)]
    pieces: list[str] = []
    for unit in units:
        if pieces and len(pieces[-1]) + 2 + len(unit) <= max_chars:
            pieces[-1] += "\n\n" + unit
        else:
            pieces.append(unit)
    return pieces


def _paragraphs(body: str) -> list[str]:
    """Blank-line separated paragraphs; a fenced code block stays one paragraph."""
    paragraphs: list[list[str]] = [[]]
    in_fence = False
    for line in body.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        if not line.strip() and not in_fence:
            paragraphs.append([])
        else:
            paragraphs[-1].append(line)
    return ["\n".join(lines).strip() for lines in paragraphs if "\n".join(lines).strip()]


def _fit(paragraph: str, max_chars: int) -> list[str]:
    if len(paragraph) <= max_chars:
        return [paragraph]
    parts: list[str] = []
    for sentence in _SENTENCE_END.split(paragraph):
        for piece in _hard_split(sentence, max_chars):
            if parts and len(parts[-1]) + 1 + len(piece) <= max_chars:
                parts[-1] += " " + piece
            else:
                parts.append(piece)
    return parts


def _hard_split(sentence: str, max_chars: int) -> list[str]:
    if len(sentence) <= max_chars:
        return [sentence]
    pieces: list[str] = []
    for word in sentence.split():
        if pieces and len(pieces[-1]) + 1 + len(word) <= max_chars:
            pieces[-1] += " " + word
        else:
            pieces.append(word[:max_chars])
    return pieces
