"""Reading files into documents and splitting them into heading-aware chunks."""

import pytest

from retrieval.chunking import MAX_CHARS, chunk_document, context_text
from retrieval.documents import Document, DocumentError, read_document


def test_front_matter_becomes_metadata(corpus):
    document = read_document(corpus / "cdna3" / "fp8-formats.md", "fp8-formats.md")
    assert document.title == "FP8 formats on MI300X"
    assert document.architectures == ("cdna3",)
    assert document.topics == ("fp8", "numerics")
    assert document.sources[0] == "Fixture source: OCP 8-bit floating point specification"
    # A source written as a mapping still reads as one citation line.
    assert "https://example.org/fnuz" in document.sources[1]
    assert not document.text.startswith("---")


def test_chunks_follow_headings_and_leave_code_comments_alone(corpus):
    chunks = chunk_document(read_document(corpus / "cdna3" / "lds-banks.md", "lds-banks.md"))
    assert [chunk.section for chunk in chunks] == ["Capacity per compute unit", "Banks and conflicts"]
    assert "# A comment inside code is not a heading" in chunks[1].text
    assert [chunk.ordinal for chunk in chunks] == [0, 1]


def test_nested_headings_make_a_path_without_the_title():
    text = "# Note\nintro\n## Memory\nabout memory\n### Banks\nabout banks\n## Compute\nabout compute\n"
    chunks = chunk_document(Document(path="n.md", title="Note", text=text))
    assert [chunk.section for chunk in chunks] == ["", "Memory", "Memory > Banks", "Compute"]


def test_long_sections_split_at_paragraphs_within_the_limit():
    paragraphs = [f"Paragraph {n} " + "about tiles and banks. " * 9 for n in range(20)]
    text = "## Long section\n" + "\n\n".join(paragraphs)
    chunks = chunk_document(Document(path="n.md", title="Note", text=text))
    assert len(chunks) > 1
    assert all(len(chunk.text) <= MAX_CHARS for chunk in chunks)
    assert {chunk.section for chunk in chunks} == {"Long section"}
    assert " ".join(c.text for c in chunks).split() == " ".join(paragraphs).split()


def test_oversized_paragraphs_split_by_sentence_then_word():
    sentence_wall = "A sentence about registers. " * 100
    word_wall = "x" * 50 + " " + "word " * 400
    for body in (sentence_wall, word_wall):
        chunks = chunk_document(Document(path="n.md", title="Note", text=body), max_chars=300)
        assert len(chunks) > 1
        assert all(len(chunk.text) <= 300 for chunk in chunks)
        assert " ".join(c.text for c in chunks).split() == body.split()


def test_context_text_carries_title_and_section():
    assert context_text("LDS", "Banks", "32 banks") == "LDS > Banks\n32 banks"
    assert context_text("LDS", "", "intro") == "LDS\nintro"


def test_markdown_without_front_matter_takes_its_h1_as_title(tmp_path):
    path = tmp_path / "plain.md"
    path.write_text("# Wave quantization\n\nTail effects.\n")
    assert read_document(path, "plain.md").title == "Wave quantization"


def test_text_file_is_one_document_titled_by_its_name(corpus):
    document = read_document(corpus / "my-notes.txt", "my-notes.txt")
    assert document.title == "my-notes"
    assert document.architectures == ()


def test_html_keeps_headings_and_drops_scripts(tmp_path):
    path = tmp_path / "page.html"
    path.write_text(
        "<html><head><title>Occupancy guide</title><script>var x = 1;</script></head><body>"
        "<nav>Home | Docs</nav><h2>Registers</h2><p>Fewer <b>VGPRs</b> mean more waves.</p>"
        "<h3>Spills</h3><p>Spills go to scratch.</p></body></html>"
    )
    document = read_document(path, "page.html")
    assert document.title == "Occupancy guide"
    chunks = chunk_document(document)
    assert [chunk.section for chunk in chunks] == ["Registers", "Registers > Spills"]
    assert chunks[0].text == "Fewer VGPRs mean more waves."
    assert "var x" not in document.text and "Home" not in document.text


def test_pdf_pages_become_sections(tmp_path, make_pdf):
    path = tmp_path / "paper.pdf"
    path.write_bytes(make_pdf(["Stream-K balances tiles", "Split-K adds a reduction"]))
    chunks = chunk_document(read_document(path, "paper.pdf"))
    assert [(c.section, c.text) for c in chunks] == [
        ("page 1", "Stream-K balances tiles"),
        ("page 2", "Split-K adds a reduction"),
    ]


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("broken.pdf", b"%PDF-1.4 not really", "unreadable PDF"),
        ("bad-front-matter.md", b"---\ntitle: [unclosed\n---\nbody", "front matter is not valid YAML"),
        ("list-front-matter.md", b"---\n- a\n- b\n---\nbody", "front matter must be a YAML mapping"),
        ("slides.pptx", b"PK", "unsupported file type"),
    ],
)
def test_bad_files_raise_one_line_errors_naming_the_file(tmp_path, name, content, reason):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(DocumentError) as error:
        read_document(path, name)
    message = str(error.value)
    assert message.startswith(f"{name}: ") and reason in message and "\n" not in message
