"""Stand-ins for the embedding model (fast, deterministic, or missing) and a minimal PDF writer."""

import hashlib
import re

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

from retrieval.embedding import EmbeddingUnavailable


@register_embedding_function
class HashingEmbedding(EmbeddingFunction[Documents]):
    """Bag of hashed words: deterministic, instant, and similar texts get similar vectors."""

    def __init__(self, dims: int = 64) -> None:
        self.dims = dims
        self.embedded = 0

    def __call__(self, input: Documents) -> Embeddings:
        self.embedded += len(input)
        return [self._vector(text) for text in input]

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dims, dtype=np.float32)
        vector[0] = 0.1  # keeps texts without known words off the zero vector
        for word in self.words(text):
            vector[1 + int(hashlib.md5(word.encode()).hexdigest(), 16) % (self.dims - 1)] += 1.0
        return vector / np.linalg.norm(vector)

    @staticmethod
    def words(text: str) -> list[str]:
        return re.findall(r"[a-z]+", text.lower())

    @staticmethod
    def name() -> str:
        return "test-hashing"

    def get_config(self) -> dict:
        return {"dims": self.dims}

    @staticmethod
    def build_from_config(config: dict) -> "HashingEmbedding":
        return HashingEmbedding(config["dims"])

    def default_space(self) -> str:
        return "cosine"


@register_embedding_function
class BlindEmbedding(HashingEmbedding):
    """A model that never saw identifiers with digits in them, like a small embedding model meeting e4m3fnuz."""

    @staticmethod
    def words(text: str) -> list[str]:
        return [word for word in re.findall(r"[a-z0-9]+", text.lower()) if word.isalpha()]

    @staticmethod
    def name() -> str:
        return "test-blind"

    @staticmethod
    def build_from_config(config: dict) -> "BlindEmbedding":
        return BlindEmbedding(config["dims"])


@register_embedding_function
class MissingModel(HashingEmbedding):
    """What a GPU machine without the model files sees."""

    def __call__(self, input: Documents) -> Embeddings:
        raise EmbeddingUnavailable("embedding model test-missing unavailable (no files)")

    @staticmethod
    def name() -> str:
        return "test-missing"

    @staticmethod
    def build_from_config(config: dict) -> "MissingModel":
        return MissingModel(config["dims"])


def pdf_bytes(pages: list[str]) -> bytes:
    """A minimal valid PDF with one line of Helvetica text per page."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", None, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    kids = []
    for text in pages:
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream.decode()}\nendstream")
        content = len(objects)
        objects.append(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {content} 0 R >>"
        )
        kids.append(f"{len(objects)} 0 R")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>"
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{offset:010d} 00000 n \n" for offset in offsets).encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)
