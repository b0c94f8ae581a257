"""Red team: the code trusted processes load, written by a candidate (judge/readonly_code.py).

A red-team helper who had not seen the design found it from the code alone: the candidate runs as the user who owns
the checkout, and every worker puts the checkout ahead of the standard library on its import path. A `statistics.py`
planted there ran in the next reference worker (one its own out-of-memory report had the parent start) before that
worker's tripwire took its snapshot; a wrong output then read correct at 2.3x on the CPU, a strict re-evaluation's
fresh reference was compromised the same way, and every later process started from the checkout imported it. The
class is any place a trusted process loads code from: the checkout, the interpreter's directories, the reference's
build caches. Answered: in the candidate's mount namespace all of them are bound read-only before its worker starts.
"""

import json
from pathlib import Path

import pytest

from evaluators import evaluate
from evaluators.judge import process, readonly_code
from evaluators.judge.environment import REPO_ROOT, build_root, worker_env
from kernels.problem import load_problem
from tests.evaluators.redteam.test_redteam_shared import attack


def _mounts_made(options) -> bool:
    if not process.pid_namespace_available():
        return False
    return bool(readonly_code.script_for(options.cache_dir, Path("/tmp"), process._UNSHARE))


def test_a_candidate_cannot_write_where_trusted_processes_load_code(own_problem, options):
    if not _mounts_made(options):
        pytest.skip("no user and mount namespace here: the candidate runs beside the harness (docs/CONTRACTS.md)")
    options = options.model_copy(update={"timing": False})
    result = evaluate(load_problem(own_problem), attack("plant_code_for_trusted_processes"), "cpu", options)
    tries = json.loads((options.cache_dir / "plant-tries.json").read_text())
    assert result.status == "correct", result.message  # the mounts leave an honest candidate's work alone
    assert set(tries) == {"checkout", "standard library", "site-packages", "reference builds"}
    assert not [place for place, met in tries.items() if met.endswith("written")], tries
    assert not list(REPO_ROOT.glob("ks_redteam_plant.py"))


def test_the_reference_builds_apart_from_candidates(tmp_path, options):
    ours = worker_env("cpu", tmp_path, options, "tc", "reference")
    theirs = worker_env("cpu", tmp_path, options, "tc", "candidate")
    assert ours["TRITON_CACHE_DIR"].startswith(str(build_root(options.cache_dir, "reference")))
    assert theirs["TRITON_CACHE_DIR"].startswith(str(build_root(options.cache_dir, "candidate")))
    assert ours["TORCHINDUCTOR_CACHE_DIR"] != theirs["TORCHINDUCTOR_CACHE_DIR"]


def test_only_the_outermost_of_nested_paths_is_bound_and_writable_ones_inside_are_bound_again(tmp_path):
    code, inner = tmp_path / "code", tmp_path / "code" / "lib"
    inner.mkdir(parents=True)
    assert readonly_code.outermost([inner, code, code]) == [code]
    lines = readonly_code.mount_lines([code], [code / "cache", tmp_path / "elsewhere"])
    assert lines == [
        f"mount --rbind {code} {code}",
        f"mount -o remount,bind,ro {code}",
        f"mount --rbind {code / 'cache'} {code / 'cache'}",
        f"mount -o remount,bind,rw {code / 'cache'}",
    ]
