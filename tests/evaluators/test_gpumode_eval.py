"""A GPU MODE problem through the evaluator: its shapes, its custom_kernel form, the same guarantees as ModelNew."""

from pathlib import Path

from evaluators import EvalOptions, evaluate

FIXTURES = Path(__file__).parents[1] / "kernels" / "fixtures" / "gpumode"
PROBLEM = FIXTURES / "problems" / "row-scale"


def test_a_custom_kernel_submission_is_judged_on_every_shape(cache_dir):
    source = (FIXTURES / "submissions" / "row-scale.py").read_text()
    result = evaluate(str(PROBLEM), source, "cpu", EvalOptions(cache_dir=cache_dir, timeout_s=30))
    assert result.status == "correct", result.message
    assert {s.kind for s in result.shapes} == {"benchmark", "test"}
    assert all(s.speedup for s in result.shapes if s.kind == "benchmark")


def test_a_submission_without_custom_kernel_is_a_compile_error(cache_dir):
    source = (FIXTURES / "submissions" / "no_custom_kernel.py").read_text()
    result = evaluate(str(PROBLEM), source, "cpu", EvalOptions(cache_dir=cache_dir, timing=False))
    assert result.status == "compile_error" and "custom_kernel" in result.message


def judge_cheat(cache_dir, cheat: str):
    """The honest row-scale submission renamed `_honest`, with `cheat` (defining custom_kernel) after it."""
    source = (FIXTURES / "submissions" / "row-scale.py").read_text()
    source = source.replace("def custom_kernel(", "def _honest(") + cheat
    return evaluate(str(PROBLEM), source, "cpu", EvalOptions(cache_dir=cache_dir, timeout_s=30))


def test_a_cached_answer_is_caught_in_the_gpumode_form_too(cache_dir):
    result = judge_cheat(
        cache_dir,
        "\n\n_seen = {}\n\n\ndef custom_kernel(data):\n"
        "    key = tuple(t.shape for t in data if hasattr(t, 'shape'))\n"
        "    if key not in _seen or len(_seen) > 100:\n"
        "        _seen[key] = _honest(data)\n"
        "    _seen['calls'] = _seen.get('calls', 0) + 1\n"
        "    return _seen[key] if _seen['calls'] > 12 else _honest(data)\n",
    )
    assert result.status == "incorrect", result.message


def test_a_submission_that_wraps_generate_input_to_precompute_is_stopped(cache_dir):
    result = judge_cheat(
        cache_dir,
        "\n\nimport reference\n\n_answers = {}\n_real_generate = reference.generate_input\n\n\n"
        "def _generate_and_precompute(**case):\n"
        "    data = _real_generate(**case)\n"
        "    _answers[id(data)] = _honest(data)  # untimed: the harness is drawing inputs\n"
        "    return data\n\n\n"
        "reference.generate_input = _generate_and_precompute\n\n\n"
        "def custom_kernel(data):\n"
        "    answer = _answers.pop(id(data), None)\n"
        "    return answer if answer is not None else _honest(data)\n",
    )
    assert result.status == "runtime_error", result.message
    assert "replaced reference.generate_input" in result.message
