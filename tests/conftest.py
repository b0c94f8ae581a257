"""Suite-wide settings: offline models, Triton's interpreter without a GPU, and the `gpu` marker."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

HAS_GPU = torch.cuda.is_available()


@pytest.fixture(autouse=True, scope="session")
def _own_index_dir(tmp_path_factory):
    """Runs under test build their literature index here, never in the user's ~/.cache."""
    if "KS_INDEX_DIR" in os.environ:
        yield
        return
    os.environ["KS_INDEX_DIR"] = str(tmp_path_factory.mktemp("index"))
    yield
    del os.environ["KS_INDEX_DIR"]


if not HAS_GPU:
    # Triton reads this when kernels are defined, so it must be set before any test imports one.
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_collection_modifyitems(config, items):
    """Skip `gpu` tests cleanly where no GPU is present."""
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
