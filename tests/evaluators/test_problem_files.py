"""The problem's files, watched while candidates run: a change is put back and set against whoever ran then."""

import shutil

import pytest

from evaluators.judge import problem_files
from evaluators.judge.evaluate import EnvironmentFailure
from kernels.bundle import pack_problem
from kernels.problem import load_problem
from tests.evaluators.conftest import PROBLEM
from tests.kernels.test_bundle import gpumode_like_directory

TAMPER = "\n\nModel.forward = lambda self, x: x  # a candidate's\n"


@pytest.fixture
def problem(tmp_path):
    path = tmp_path / "problems" / PROBLEM.name
    path.parent.mkdir()
    shutil.copy(PROBLEM, path)
    path.chmod(0o640)
    return load_problem(path)


def watch(problem) -> int:
    return problem_files.watch(problem, pack_problem(problem))


def codes(found) -> set[str]:
    return {code for code, _ in found}


def test_a_change_while_one_evaluation_ran_is_put_back_and_is_its_candidates(problem):
    original = problem.path.read_text()
    token = watch(problem)
    problem.path.write_text(original + TAMPER)
    found = problem_files.release(token)
    assert codes(found) == {"rewrote_problem"} and "scale_shift.py" in found[0][1]
    assert problem.path.read_text() == original and problem.path.stat().st_mode & 0o777 == 0o640


def test_an_evaluation_that_changed_nothing_earns_nothing(problem):
    assert problem_files.release(watch(problem)) == []


@pytest.mark.parametrize("how", ["deleted", "replaced by a link"])
def test_a_file_removed_or_replaced_by_a_link_is_put_back_in_its_place(problem, tmp_path, how):
    original, elsewhere = problem.path.read_text(), tmp_path / "elsewhere.py"
    elsewhere.write_text("x = 1\n")
    token = watch(problem)
    problem.path.unlink()
    if how != "deleted":
        problem.path.symlink_to(elsewhere)
    assert codes(problem_files.release(token)) == {"rewrote_problem"}
    assert not problem.path.is_symlink() and problem.path.read_text() == original
    assert elsewhere.read_text() == "x = 1\n"


def test_while_several_ran_each_is_set_aside_for_a_strict_run_to_clear(problem, tmp_path):
    other = load_problem(shutil.copy(PROBLEM, tmp_path / "other.py"))  # another problem's evaluation beside it
    first, second = watch(problem), watch(other)
    problem.path.write_text(problem.path.read_text() + TAMPER)
    later = watch(problem)  # began after the change: it is found as it begins, and not set against it
    assert problem_files.release(later) == []
    assert codes(problem_files.release(first)) == {"problem_changed"}
    assert codes(problem_files.release(second)) == {"problem_changed"}
    assert TAMPER not in problem.path.read_text()


def test_a_problem_loaded_from_the_changed_file_is_not_judged(problem):
    token = watch(problem)
    problem.path.write_text(problem.path.read_text() + TAMPER)
    tampered = load_problem(problem.path)  # as the graph loads its problem for each evaluation
    with pytest.raises(EnvironmentFailure, match=r"^not judged: problem scale_shift was loaded from .* had changed"):
        watch(tampered)
    problem_files.release(token)
    with pytest.raises(EnvironmentFailure, match=r"^not judged:"):  # nor once the change has been put back
        watch(tampered)
    assert problem_files.release(watch(load_problem(problem.path))) == []


def test_a_file_edited_while_no_evaluation_watched_it_is_left_as_it_is(problem):
    problem.path.write_text(problem.path.read_text() + "\n# a person's edit, after the batch loaded the problem\n")
    edited = problem.path.read_text()
    assert problem_files.release(watch(problem)) == []  # judged by the text it loaded; the edit is no one's
    assert problem.path.read_text() == edited


def test_a_problem_directorys_files_are_watched_those_above_it_included(tmp_path):
    directory = gpumode_like_directory(tmp_path)
    utils = directory.path.parent / "utils.py"
    original = utils.read_text()
    token = watch(directory)
    utils.write_text(original + "helper = None\n")
    assert codes(problem_files.release(token)) == {"rewrote_problem"}
    assert utils.read_text() == original
