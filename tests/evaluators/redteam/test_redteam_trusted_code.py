"""Red team: the code trusted processes load, written by a candidate (judge/readonly_code.py).

A red-team helper who had not seen the design found it from the code alone: the candidate runs as the user who owns
the checkout, and every worker puts the checkout ahead of the standard library on its import path. A `statistics.py`
planted there ran in the next reference worker (one its own out-of-memory report had the parent start) before that
worker's tripwire took its snapshot; a wrong output then read correct at 2.3x on the CPU, a strict re-evaluation's
fresh reference was compromised the same way, and every later process started from the checkout imported it. The
class is any place a trusted process loads code from: the checkout, the interpreter's directories, the reference's
build caches; and, a second helper found, the reference's own scratch directory (its TMPDIR, where torch.compile keeps
headers it compiles into every kernel: a planted one ran in the warm reference with --compile-baseline, and a slow
kernel read 1.0x against its 0.003x), the system's directories and PATH (the evaluator runs as root here). Answered: in
the candidate's mount namespace all of them are bound read-only before its worker starts, its own scratch directory
and the cache directory writable again.
"""

import json
import subprocess
from pathlib import Path

import pytest

from evaluators import evaluate
from evaluators.judge import process, readonly_code
from evaluators.judge.environment import REPO_ROOT, build_root, worker_env
from kernels.problem import load_problem
from tests.evaluators.redteam.test_redteam_shared import attack


def _mounts_made() -> bool:
    """Whether a namespace like a candidate's worker's can remount the root read-only here."""
    if not process.pid_namespace_available():
        return False
    check = "mount -o remount,bind,ro / 2>/dev/null || exit 3\n"
    return subprocess.run([*process._UNSHARE, "/bin/sh", "-c", check], capture_output=True, timeout=30).returncode == 0


def test_a_candidate_cannot_write_where_trusted_processes_load_code(own_problem, options):
    if not _mounts_made():
        pytest.skip("no user and mount namespace here: the candidate runs beside the harness (docs/CONTRACTS.md)")
    options = options.model_copy(update={"timing": False})
    result = evaluate(load_problem(own_problem), attack("plant_code_for_trusted_processes"), "cpu", options)
    tries = json.loads((options.cache_dir / "plant-tries.json").read_text())
    assert result.status == "correct", result.message  # the mounts leave an honest candidate's work alone
    assert len(tries) == 7 and "none-found" not in tries["another worker's scratch"], tries
    assert not [place for place, met in tries.items() if met.endswith("written")], tries
    assert not list(REPO_ROOT.glob("ks_redteam_plant.py"))


def test_the_reference_builds_apart_from_candidates(tmp_path, options):
    ours = worker_env("cpu", tmp_path, options, "tc", "reference")
    theirs = worker_env("cpu", tmp_path, options, "tc", "candidate")
    assert ours["TRITON_CACHE_DIR"].startswith(str(build_root(options.cache_dir, "reference")))
    assert theirs["TRITON_CACHE_DIR"].startswith(str(build_root(options.cache_dir, "candidate")))
    assert ours["TORCHINDUCTOR_CACHE_DIR"] != theirs["TORCHINDUCTOR_CACHE_DIR"]


def test_every_mount_is_read_only_but_the_candidates_own_directories(tmp_path):
    lines = readonly_code.script([Path("/"), Path("/home")], [tmp_path / "cache", tmp_path / "own"], tmp_path / "rb")
    assert lines.splitlines() == [
        "if mount -o remount,bind,ro / 2>/dev/null; then",
        "set -e",
        "mount -o remount,bind,ro /home",
        f"mount --rbind {tmp_path / 'cache'} {tmp_path / 'cache'}",
        f"mount -o remount,bind,rw {tmp_path / 'cache'}",
        f"mount --rbind {tmp_path / 'own'} {tmp_path / 'own'}",
        f"mount -o remount,bind,rw {tmp_path / 'own'}",
        f"mount --rbind {tmp_path / 'rb'} {tmp_path / 'rb'}",
        f"mount -o remount,bind,ro {tmp_path / 'rb'}",
        'cd "$PWD"',
        "set +e",
        "fi",
    ]
    points = readonly_code.mount_points()
    assert points[0] == Path("/") and not [p for p in points if p.parts[1:2] in (("proc",), ("sys",), ("dev",))]
