"""Static checks: fatal errors and the patterns that earn a `suspicious` flag, without running anything."""

from evaluators.judge.static import check_source
from tests.evaluators.conftest import PROBLEM, candidate

TRITON_FORWARD = """
import triton


@triton.jit
def scale_kernel(x_ptr):
    pass


class ModelNew(Model):
    def forward(self, x):
        scale_kernel[(1,)](x)
        return x
"""


def flags(source: str, entry: str = "ModelNew") -> list[str]:
    report = check_source(source, entry)
    assert report.error is None
    return [text for _, text in report.flags]


def codes(source: str, entry: str = "ModelNew") -> list[str]:
    report = check_source(source, entry)
    assert report.error is None, report.error
    return [code for code, _ in report.flags]


def test_honest_triton_candidate_has_no_flags():
    assert flags(candidate("good_triton")) == []


def test_load_inline_counts_as_a_custom_kernel():
    assert flags(candidate("load_inline_cuda")) == []


def test_syntax_error_and_missing_modelnew_are_fatal():
    assert "line 7" in check_source(candidate("syntax_error")).error
    assert check_source(candidate("no_modelnew")).error == "the candidate does not define ModelNew at top level"


def test_aliases_of_the_reference_are_valid_without_a_custom_kernel():
    problem = PROBLEM.read_text()
    for alias in ("ModelNew = Model", "class ModelNew(Model):\n    pass", "ModelNew: type = Model"):
        report = check_source(f"{problem}\n\n{alias}\n")
        assert report.error is None, alias
        assert report.flags == [("no_custom_kernel", "no custom kernel: ModelNew is the reference Model itself")]


def test_an_alias_is_flagged_even_beside_an_unused_kernel():
    unused = TRITON_FORWARD.replace("class ModelNew(Model):", "class Unused(Model):")
    assert codes(f"{PROBLEM.read_text()}\n{unused}\nModelNew = Model\n") == ["no_custom_kernel"]


def test_a_subclass_of_model_with_its_own_kernel_forward_is_a_kernel():
    assert codes(PROBLEM.read_text() + TRITON_FORWARD) == []


def test_the_last_binding_of_the_entry_is_the_one_judged():
    assert codes(f"{PROBLEM.read_text()}{TRITON_FORWARD}\nModelNew = Model\n") == ["no_custom_kernel"]
    assert codes(f"{PROBLEM.read_text()}\nModelNew = Model\n{TRITON_FORWARD}") == []


def test_gpu_mode_entry_is_a_function_or_an_assignment():
    kernel = "import triton\n\n\n@triton.jit\ndef k(x):\n    pass\n\n\n"
    assert codes(kernel + "def custom_kernel(data):\n    return data\n", "custom_kernel") == []
    assert codes(kernel + "custom_kernel = k\n", "custom_kernel") == []
    assert codes("def ref_kernel(data):\n    return data\n\n\ncustom_kernel = ref_kernel\n", "custom_kernel") == [
        "no_custom_kernel"
    ]
    missing = check_source(kernel + "class ModelNew:\n    pass\n", "custom_kernel")
    assert missing.error == "the candidate does not define custom_kernel at top level"


def test_an_entry_bound_only_inside_a_block_is_not_top_level():
    source = "if True:\n    class ModelNew:\n        pass\n"
    assert check_source(source).error == "the candidate does not define ModelNew at top level"


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
