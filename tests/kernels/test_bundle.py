"""Problem bundles: a problem packed as text on one machine, unpacked and loaded on another, unchanged."""

import pytest

from kernels.bundle import pack_problem, unpack_once, unpack_problem, write_bundle
from kernels.problem import load_problem
from kernels.problem_types import Problem, ProblemError


def test_a_kernelbench_file_travels_and_loads_the_same(tmp_path):
    problem = load_problem("fused_residual_norm")
    bundle = pack_problem(problem)
    assert bundle["path"] == "fused_residual_norm.py" and list(bundle["files"]) == ["fused_residual_norm.py"]
    (tmp_path / "node").mkdir()
    unpacked = unpack_problem(bundle, tmp_path / "node")
    assert unpacked.path == tmp_path / "node" / "fused_residual_norm.py"
    assert (unpacked.name, unpacked.digest, unpacked.shape_sets) == (problem.name, problem.digest, problem.shape_sets)


def gpumode_like_directory(root):
    """A problem directory whose task.yml also points one level up, as reference-kernels' problems do."""
    (root / "family" / "scale").mkdir(parents=True)
    (root / "family" / "utils.py").write_text("def helper():\n    return 1\n")
    (root / "family" / "unrelated.py").write_text("not part of the problem\n")
    directory = root / "family" / "scale"
    (directory / "task.yml").write_text(
        "files:\n"
        '  - {"name": "submission.py", "source": "@SUBMISSION@"}\n'
        '  - {"name": "reference.py", "source": "reference.py"}\n'
        '  - {"name": "utils.py", "source": "../utils.py"}\n'
    )
    (directory / "reference.py").write_text("def ref_kernel(data):\n    return data\n")
    (directory / "notes.md").write_text("every regular file of the directory travels\n")
    return Problem(name="scale", path=directory, source=(directory / "reference.py").read_text(), format="gpumode")


def test_a_problem_directory_takes_its_files_and_those_task_yml_points_to(tmp_path):
    bundle = pack_problem(gpumode_like_directory(tmp_path / "checkout"))
    assert bundle["format"] == "gpumode" and bundle["path"] == "scale"
    assert sorted(bundle["files"]) == ["scale/notes.md", "scale/reference.py", "scale/task.yml", "utils.py"]
    written = write_bundle(bundle, tmp_path / "node")
    assert written == tmp_path / "node" / "scale" and (written / "../utils.py").read_text().startswith("def helper")


def test_a_task_yml_pointing_at_a_missing_file_is_one_line(tmp_path):
    problem = gpumode_like_directory(tmp_path)
    (problem.path / "task.yml").write_text('files:\n  - {"name": "helpers.py", "source": "../helpers.py"}\n')
    with pytest.raises(ProblemError, match=r"^problem scale: task.yml lists \.\./helpers\.py, which is not a file$"):
        pack_problem(problem)


def test_the_formats_own_harness_is_left_behind_as_the_loader_leaves_it(tmp_path):
    problem = gpumode_like_directory(tmp_path)
    (problem.path / "task.yml").write_text('files:\n  - {"name": "eval.py", "source": "../eval.py"}\n')
    assert not any(name.endswith("eval.py") for name in pack_problem(problem)["files"])


@pytest.mark.parametrize("relpath", ["../escape.py", "/etc/passwd", "a/../../b.py"])
def test_a_bundle_cannot_write_outside_its_directory(tmp_path, relpath):
    bundle = {"name": "x", "format": "kernelbench", "digest": "", "path": "x.py", "files": {relpath: "x = 1\n"}}
    with pytest.raises(ProblemError, match="leaves the bundle"):
        write_bundle(bundle, tmp_path)


def test_a_bundle_altered_in_transit_is_refused(tmp_path):
    bundle = pack_problem(load_problem("row_softmax"))
    bundle["files"]["row_softmax.py"] += "\n# changed\n"
    with pytest.raises(ProblemError, match="changed in transit"):
        unpack_problem(bundle, tmp_path)


def test_a_bundle_is_laid_out_once_per_machine_at_a_path_named_by_its_digest(tmp_path):
    bundle = pack_problem(load_problem("fused_residual_norm"))
    first = unpack_once(bundle, tmp_path / "problems")
    again = unpack_once(bundle, tmp_path / "problems")
    assert first.path == again.path == tmp_path / "problems" / bundle["digest"] / "fused_residual_norm.py"
    assert [p.name for p in (tmp_path / "problems").iterdir()] == [bundle["digest"]]  # no staging folder left
    first.path.write_text(first.path.read_text() + "\n# edited on the node\n")
    with pytest.raises(ProblemError, match="was changed on this machine"):
        unpack_once(bundle, tmp_path / "problems")
    with pytest.raises(ProblemError, match="no valid digest"):
        unpack_once(bundle | {"digest": "../../etc"}, tmp_path / "problems")
