"""Static checks: fatal errors and the patterns that earn a `suspicious` flag, without running anything."""

from evaluators.static import check_source
from tests.evaluators.conftest import candidate


def flags(source: str) -> list[str]:
    report = check_source(source)
    assert report.error is None
    return [text for _, text in report.flags]


def test_honest_triton_candidate_has_no_flags():
    assert flags(candidate("good_triton")) == []


def test_load_inline_counts_as_a_custom_kernel():
    assert flags(candidate("load_inline_cuda")) == []


def test_syntax_error_and_missing_modelnew_are_fatal():
    assert "line 7" in check_source(candidate("syntax_error")).error
    assert "ModelNew" in check_source(candidate("no_modelnew")).error


def test_streams_and_threads_are_flagged():
    source = """
import threading, torch
class ModelNew:
    def forward(self, x):
        s = torch.cuda.Stream()
        threading.Thread(target=print).start()
        return x
"""
    found = flags(source)
    assert any("creates a CUDA stream" in f for f in found)
    assert any("starts a thread" in f for f in found)


def test_patched_clocks_and_comparisons_are_flagged():
    found = flags(candidate("patch_clocks")) + flags(candidate("patch_comparisons"))
    for target in ("time.perf_counter", "torch.cuda.Event.elapsed_time", "torch.allclose", "torch.equal"):
        assert any(target in f for f in found), target


def test_environment_reads_are_flagged():
    assert any("environment" in f for f in flags(candidate("env_snoop")))


def test_a_try_without_torch_in_its_handler_is_not_a_fallback():
    source = (
        "class ModelNew:\n    def forward(self, x):\n        try:\n            return x\n        except KeyError:\n"
    )
    assert not any("fallback" in f for f in flags(source + "            raise\n"))
