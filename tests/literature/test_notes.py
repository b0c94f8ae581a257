"""The knowledge-base notes: required files, front matter the index can read, and note shape."""

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2] / "literature"
CDNA3 = ROOT / "cdna3"

# Benchmark questions for retrieval are written against these exact names.
REQUIRED_NOTES = [
    "mi300x-chiplets-and-compute-units.md",
    "wavefronts-and-simds.md",
    "vgprs-agprs-and-occupancy.md",
    "lds-size-and-banking.md",
    "cache-hierarchy.md",
    "hbm3-memory.md",
    "peak-rates-by-dtype.md",
    "mfma-instructions.md",
    "mfma-operand-layouts.md",
    "fp8-fnuz-formats.md",
    "hip-performance-guidelines.md",
    "rocprof-profiling.md",
    "triton-on-amd.md",
    "triton-amd-tuning-knobs.md",
    "composable-kernel.md",
    "dpp-and-cross-lane-ops.md",
    "global-memory-access.md",
    "scalar-unit-and-sgprs.md",
    "latency-hiding-and-instruction-scheduling.md",
    "mi300-fp8-gemm-competition.md",
    "hipblaslt-and-rocm-libraries.md",
    "xcd-aware-scheduling.md",
]
ARCHITECTURES = {"cdna3", "hopper", "generic"}
KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def split(path: Path) -> tuple[dict, str]:
    """Front matter mapping and Markdown body of one note."""
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), f"{path.name}: no front matter"
    _, front, body = text.split("---\n", 2)
    return yaml.safe_load(front), body


def notes() -> list[Path]:
    return sorted(path for folder in ("cdna3", "hopper", "techniques") for path in (ROOT / folder).glob("*.md"))


def test_the_corpus_has_at_least_forty_notes():
    assert len(notes()) >= 40


def test_every_required_note_exists():
    missing = [name for name in REQUIRED_NOTES if not (CDNA3 / name).is_file()]
    assert missing == []


@pytest.mark.parametrize("path", notes(), ids=lambda p: p.name)
def test_front_matter_is_complete(path):
    front, _ = split(path)
    assert isinstance(front.get("title"), str) and front["title"].strip()
    assert isinstance(front.get("sources"), list) and front["sources"], "a note must name its sources"
    assert all(isinstance(source, str) and len(source) > 10 for source in front["sources"])
    architectures = front.get("architectures")
    assert architectures and set(architectures) <= ARCHITECTURES
    if path.parent.name != "techniques":
        assert path.parent.name in architectures
    assert front.get("topics") and all(KEBAB.match(topic) for topic in front["topics"])


@pytest.mark.parametrize("path", notes(), ids=lambda p: p.name)
def test_body_has_title_sections_and_actions(path):
    front, body = split(path)
    assert body.lstrip().startswith(f"# {front['title']}\n")
    sections = re.findall(r"^## (.+)$", body, flags=re.MULTILINE)
    assert len(sections) >= 3
    assert sections[-1] == "What to try"
    actions = body.split("## What to try", 1)[1]
    assert len(re.findall(r"^- ", actions, flags=re.MULTILINE)) >= 2


@pytest.mark.parametrize("path", notes(), ids=lambda p: p.name)
def test_body_length_is_a_note_not_a_stub(path):
    _, body = split(path)
    words = len(body.split())
    assert 250 <= words <= 800, f"{path.name}: {words} words"


@pytest.mark.parametrize("path", notes(), ids=lambda p: p.name)
def test_facts_carry_inline_citations(path):
    _, body = split(path)
    assert len(re.findall(r"\[[^\]]+\]", body)) >= 3, "facts should name their source inline"


def test_sources_page_lists_documents_with_urls():
    front, body = split(ROOT / "SOURCES.md")
    assert front["sources"] == ["self"]
    assert set(front["architectures"]) == ARCHITECTURES
    assert len(re.findall(r"https?://", body)) >= 15
    for note in REQUIRED_NOTES:
        assert note.removesuffix(".md") in body, f"SOURCES.md never maps a document to {note}"
