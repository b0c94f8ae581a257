"""The cache flush is sized to the GPU's L2 (worker/timing.flush_size): what a candidate could skip stays small."""

from types import SimpleNamespace

import torch

from evaluators.worker import timing


def _device(monkeypatch, l2_bytes: int, hip: str | None = None) -> None:
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: SimpleNamespace(L2_cache_size=l2_bytes))
    monkeypatch.setattr(torch.version, "hip", hip)


def test_a_cuda_gpu_flushes_twice_its_l2(monkeypatch):
    _device(monkeypatch, 50 << 20)  # an H100's
    assert timing.flush_size(None, "cuda") == 100


def test_an_odd_l2_rounds_up_to_a_whole_megabyte(monkeypatch):
    _device(monkeypatch, 3 << 19)  # 1.5 MB
    assert timing.flush_size(None, "cuda") == 3
    _device(monkeypatch, (1 << 20) + 1)
    assert timing.flush_size(None, "cuda") == 3


def test_rocm_and_an_unknown_cache_keep_512_mb(monkeypatch):
    """torch reports MI300X's L2, not its 256 MB Infinity Cache."""
    _device(monkeypatch, 4 << 20, hip="6.2")
    assert timing.flush_size(None, "cuda") == 512
    _device(monkeypatch, 0)
    assert timing.flush_size(None, "cuda") == 512


def test_an_asked_size_is_kept_and_the_cpu_flushes_nothing(monkeypatch):
    _device(monkeypatch, 50 << 20)
    assert timing.flush_size(64, "cuda") == 64
    assert timing.flush_size(None, "cpu") == 0
