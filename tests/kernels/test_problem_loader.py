"""The loader: bundled problems load and apply their shapes; broken files give one-line ProblemErrors."""

import pytest

from kernels.problem import bundled_problems, load_problem
from kernels.problem_types import ProblemError
from kernels.runtime import import_problem_module

from .helpers import NAMES

VALID = """import torch.nn as nn
class Model(nn.Module):
    pass
def get_inputs():
    return []
def get_init_inputs():
    return []
"""


def test_the_six_problems_are_bundled_with_seeds():
    assert bundled_problems() == NAMES
    for name in NAMES:
        problem = load_problem(name)
        assert problem.seed_path is not None and problem.seed_path.name == f"{name}.py"
        assert set(problem.shape_sets) == {"gpu", "cpu"}
        assert problem.doc.strip(), f"{name} has no module docstring"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("device", ["gpu", "cpu"])
def test_each_device_has_three_to_six_shapes_benchmarks_first(name, device):
    shapes = load_problem(name).shape_sets[device]
    kinds = [shape.kind for shape in shapes]
    benchmarks = kinds.count("benchmark")
    assert 3 <= len(shapes) <= 6
    assert kinds == ["benchmark"] * benchmarks + ["test"] * (len(shapes) - benchmarks)
    assert benchmarks >= (3 if device == "gpu" else 2) and "test" in kinds
    assert len({shape.name for shape in shapes}) == len(shapes), "a shape is listed twice"
    assert all(set(shape.params) == set(shapes[0].params) for shape in shapes), "shapes set different globals"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("device", ["gpu", "cpu"])
def test_test_shapes_are_awkward(name, device):
    # A partial block at any usual tile size (16 to 128), so an unmasked kernel fails somewhere.
    tests = [shape for shape in load_problem(name).shape_sets[device] if shape.kind == "test"]
    assert any(value % 64 for shape in tests for value in shape.params.values())


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("config", ["gpu", "cpu"])
def test_configs_become_module_globals(name, config):
    problem = load_problem(name)
    module = import_problem_module(problem, config)
    for key, value in problem.configs[config].items():
        assert getattr(module, key) == value
    assert problem.configs["cpu"] != problem.configs["gpu"]


@pytest.mark.parametrize("name", NAMES)
def test_the_files_own_globals_are_the_first_gpu_benchmark_shape(name):
    problem = load_problem(name)
    module = import_problem_module(problem)
    first = problem.shape_sets["gpu"][0]
    assert first.kind == "benchmark"
    assert {key: getattr(module, key) for key in first.params} == first.params


def test_config_names_follow_the_device():
    problem = load_problem("row_softmax")
    assert problem.config_name("cpu") == "cpu"
    assert problem.config_name("cuda") == "gpu"


def test_a_file_path_loads_like_a_name(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text(VALID)
    problem = load_problem(str(path))
    assert problem.name == "mine" and problem.configs == {} and problem.seed_path is None


def _error_for(tmp_path, source: str, config: str | None = None) -> str:
    path = tmp_path / "broken.py"
    path.write_text(source)
    with pytest.raises(ProblemError) as caught:
        import_problem_module(load_problem(str(path)), config)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_missing_file_is_named(tmp_path):
    with pytest.raises(ProblemError, match="not found: .*nowhere.py"):
        load_problem(str(tmp_path / "nowhere.py"))


def test_unknown_bundled_name_lists_the_bundled_ones():
    with pytest.raises(ProblemError, match="unknown problem 'softmaxx'.*row_softmax"):
        load_problem("softmaxx")


def test_syntax_error_names_the_line(tmp_path):
    assert "syntax error at line 2" in _error_for(tmp_path, "import torch\ndef get_inputs(:\n")


@pytest.mark.parametrize("missing", ["Model", "get_inputs", "get_init_inputs"])
def test_each_missing_required_name_is_named(tmp_path, missing):
    renamed = VALID.replace(f"{missing}(", f"Other{missing}(")
    assert _error_for(tmp_path, renamed) == f"problem broken.py does not define {missing}"


def test_a_file_raising_at_import_is_reported_in_one_line(tmp_path):
    source = VALID + "raise RuntimeError('bad shapes\\nsecond line')\n"
    assert _error_for(tmp_path, source) == "problem broken.py failed to import: RuntimeError: bad shapes"


def test_a_file_exiting_at_import_is_reported(tmp_path):
    source = "import sys\n" + VALID + "sys.exit(3)\n"
    assert _error_for(tmp_path, source) == "problem broken.py failed to import: SystemExit: 3"


def test_configs_must_be_a_literal_dict_of_dicts(tmp_path):
    assert "CONFIGS must be a literal dict" in _error_for(tmp_path, VALID + "CONFIGS = {'gpu': dict(M=1)}\n")
    assert "CONFIGS must map" in _error_for(tmp_path, VALID + "CONFIGS = {'gpu': 3}\n")


def test_an_unknown_config_is_named(tmp_path):
    source = VALID + "CONFIGS = {'cpu': {'M': 1}}\n"
    assert _error_for(tmp_path, source, config="gpu") == "problem broken has no configuration 'gpu'"
