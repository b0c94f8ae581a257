"""Red team: the host's timing lock (worker/device_lock.py, host_lock) and the files it is made of.

The lock's files sit under KS_CACHE_DIR/locks, a directory the candidate's process is told of and can write. The
lock's design took a holder who keeps a file on purpose into account (each wait is bounded by HOST_WAIT_S, and the
caller goes on without the lock), but not a candidate that changes what the file is: host_lock opened each file with
open(path, "a") before its bounded wait, so a FIFO there hung the next evaluation for good and a directory made it
raise. Answered: a lock file is opened without blocking or following links, and anything but a regular file at its
path is moved aside and a new file made (worker/device_lock.py, _opened). Each attack runs as the control with a few
lines appended (shared/), beside an honest evaluation of another copy of the problem (another problem's reference, as
in a batch or on another GPU of the machine), and asserts what an honest evaluator must do: judge the honest one,
within the lock's bounded wait.

The last test is not the lock's own doing and not new with timings side by side: the host lock keeps only honest
neighbours quiet. Another evaluation's candidate runs beside any timing (in its import and build, which hold no
lock; on GPUs now also in its own timing commands), and nothing stops it while someone else's reference times.
"""

import concurrent.futures
import os
import shutil
import stat
import time
from pathlib import Path

import pytest

from evaluators import evaluate
from evaluators.worker import device_lock
from kernels.problem import load_problem
from tests.evaluators.redteam.test_redteam import CONTROL
from tests.evaluators.redteam.test_redteam_shared import another_problem, attack

# The host lock's wait in these tests: a short one stands for HOST_WAIT_S (30 s), so a wait that is bounded ends well
# within JUDGED_S, and one that is not shows as a hang.
SHORT_WAIT_S = 2.0
JUDGED_S = 20.0  # an honest CPU evaluation takes 3-5 s here; 20 s covers it and a few bounded waits of SHORT_WAIT_S


def _unjam(path: Path) -> None:
    """Put a regular file back where an attack left a FIFO or a directory, waking whoever waits to open the FIFO."""
    for _ in range(50):
        try:
            mode = path.lstat().st_mode
        except FileNotFoundError:
            return
        if stat.S_ISFIFO(mode):
            reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # wakes every open() blocked on it
            try:
                path.unlink()  # later opens make a regular file
                time.sleep(0.2)
            finally:
                os.close(reader)
        elif stat.S_ISDIR(mode):
            shutil.rmtree(path, ignore_errors=True)
        else:
            return


def _judged_within(own_problem: Path, tmp_path: Path, options, limit_s: float):
    """An honest evaluation of another problem: (its result, what it raised, or None where it did not end within
    `limit_s`; the seconds it took)."""
    other = another_problem(tmp_path)
    pool = concurrent.futures.ThreadPoolExecutor(1)
    started = time.monotonic()
    honest = pool.submit(evaluate, load_problem(other), CONTROL, "cpu", options)
    try:
        return honest.result(timeout=limit_s), time.monotonic() - started
    except concurrent.futures.TimeoutError:
        return None, time.monotonic() - started
    except Exception as raised:  # noqa: BLE001 (not a verdict: the test says what it was)
        return raised, time.monotonic() - started
    finally:
        # Whatever it waits on is put right, so the thread ends and nothing is left blocked in this process.
        _unjam(options.cache_dir / "locks" / "host.turnstile")
        try:
            honest.result(timeout=120)
        except Exception:  # noqa: BLE001 (the assertion below reports what it got)
            pass
        pool.shutdown()


@pytest.mark.parametrize(("planted", "timed"), [("fifo", False), ("directory", True)])
def test_something_else_at_a_lock_files_path_does_not_hang_or_fail_the_next_evaluation(
    tmp_path, own_problem, options, monkeypatch, planted, timed
):
    """A FIFO put in the turnstile's place at import (its reader kept open, so its own locks open), or a directory put
    there inside its own timing (the host lock already held): the attacker keeps its verdict, and once its processes are
    gone the next host_lock (the honest candidate's trials, its reference's expected outputs) meets what it left. The
    next evaluation must be judged within the lock's bounded wait: before, the FIFO made it wait forever and the
    directory made it raise."""
    monkeypatch.setattr(device_lock, "HOST_WAIT_S", SHORT_WAIT_S)
    untimed = options.model_copy(update={"timing": False})
    attacker = evaluate(
        load_problem(own_problem), attack(f"plant_{planted}_host_lock"), "cpu", options if timed else untimed
    )
    assert (options.cache_dir / f"{planted}-planted").exists(), "the attack did not run"
    assert attacker.status == "correct", attacker.message
    result, took = _judged_within(own_problem, tmp_path, untimed, JUDGED_S)
    assert result is not None, f"the next evaluation did not end in {took:.0f} s (a {planted} at the turnstile's path)"
    assert not isinstance(result, Exception), f"the next evaluation was not judged: it raised {result!r}"
    assert result.status == "correct", result.message


def test_the_control_beside_an_honest_evaluation_is_judged(tmp_path, own_problem, options, monkeypatch):
    """The control of both tests above: the same two evaluations, with no attack appended."""
    monkeypatch.setattr(device_lock, "HOST_WAIT_S", SHORT_WAIT_S)
    first = evaluate(load_problem(own_problem), CONTROL, "cpu", options)
    assert first.status == "correct", first.message
    result, took = _judged_within(own_problem, tmp_path, options.model_copy(update={"timing": False}), JUDGED_S)
    assert result is not None and result.status == "correct", (took, result and result.message)


SETTLE_S = 2.0  # the spare workers each evaluation starts import torch meanwhile: the timings come once they wait

# The problem's reference made to do CPU work of the control's length, so the two are timed at about 1x.
BURNING_REFERENCE = """

import time as _time

_honest_forward = Model.forward


def _burning_forward(self, x):
    end = _time.thread_time() + 0.02  # the control's WORK_S, as host time
    while _time.thread_time() < end:
        pass
    return _honest_forward(self, x)


Model.forward = _burning_forward
"""


@pytest.mark.xfail(
    strict=True,
    reason="open: no evaluation stops or confines the machine's other candidates while its reference times (1.7-3.3x "
    "on the 2-core CPU machine); closing it needs the candidates' processes kept off the cores that time (cgroups)",
)
def test_a_helper_candidate_elsewhere_on_the_machine_does_not_raise_anothers_speedup(tmp_path, own_problem, options):
    """Not the host lock's own doing, nor new with timings side by side: the pause stops a candidate's processes while
    its reference times, not those of the machine's other evaluations. On the CPU the helper acts from its build, which
    holds no lock; on GPUs its own timing commands, beside the beneficiary's timing on another GPU, do as well."""
    own_problem.write_text(own_problem.read_text() + BURNING_REFERENCE)
    problem = load_problem(own_problem)
    options = options.model_copy(update={"cpu_reps": 9})  # medians of nine blocks a side: steadier on a busy host
    beneficiary = attack("signal_own_calls")
    time.sleep(SETTLE_S)
    alone = evaluate(problem, beneficiary, "cpu", options)  # the control: the same candidate, no helper running
    time.sleep(SETTLE_S)
    assert alone.status == "correct" and alone.speedup, alone.message
    pool = concurrent.futures.ThreadPoolExecutor(1)
    helper = pool.submit(evaluate, load_problem(another_problem(tmp_path)), attack("starve_anothers_reference"), "cpu",
                         options.model_copy(update={"timing": False}))  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (options.cache_dir / "helping").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (options.cache_dir / "helping").exists(), "the helper never started"
        time.sleep(SETTLE_S)
        helped = evaluate(problem, beneficiary, "cpu", options)
    finally:
        options.cache_dir.mkdir(parents=True, exist_ok=True)
        (options.cache_dir / "release").write_text("")  # the helper's build and its spinners end
        helper.result(timeout=120)
        pool.shutdown()
    assert helped.status == "correct", helped.message
    assert helped.speedup < 1.5 * alone.speedup, (
        f"alone {alone.speedup:.3g}x ({alone.runtime_ms:.3g} ms vs {alone.baseline_ms:.3g} ms), beside the helper "
        f"{helped.speedup:.3g}x ({helped.runtime_ms:.3g} ms vs {helped.baseline_ms:.3g} ms)"
    )
