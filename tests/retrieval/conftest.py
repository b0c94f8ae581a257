"""Fixtures for the retrieval suite: a small corpus, a fast deterministic embedding function, PDFs."""

import shutil
from pathlib import Path

import pytest

from tests.retrieval.fakes import HashingEmbedding, pdf_bytes

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def corpus(tmp_path) -> Path:
    """A private copy of the fixture notes, free to edit."""
    return shutil.copytree(FIXTURES / "notes", tmp_path / "notes")


@pytest.fixture
def index_dir(tmp_path) -> Path:
    return tmp_path / "index"


@pytest.fixture
def embedding() -> HashingEmbedding:
    return HashingEmbedding()


@pytest.fixture
def make_pdf():
    return pdf_bytes
