"""Red team, second front: state the candidate's process shares with the harness and with other evaluations.

The attacks in attacks/ each run inside one evaluation and are judged by test_redteam.py. These reach further: the
candidate runs as the harness's user, so it can write what other processes read later (the problem's file, the
reference cache, the timing locks, the simulated device), and can outlive or out-wait its own evaluation. Each is
judged against what an honest evaluator must say; a hole that is still open is an xfail(strict=True) naming it.

Every test works on a copy of the test problem and its own cache directory, and ends the warm references it made:
an attack here must not reach the rest of the suite.
"""

import concurrent.futures
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from rich.console import Console

from evaluators import EvalOptions, batch, evaluate
from evaluators.executors.local import LocalExecutor
from evaluators.judge import pause, process, reference_pool, spares
from evaluators.judge.evaluate import WORKER_OPTIONS, EnvironmentFailure
from evaluators.judge.strict import strict_options
from evaluators.worker import device_memory
from kernels.bundle import pack_problem
from kernels.problem import load_problem
from tests.evaluators.conftest import PROBLEM
from tests.evaluators.redteam.conftest import honest_beside
from tests.evaluators.redteam.test_redteam import CONTROL, false_accept
from tests.evaluators.test_orphan_guard import alive

HERE = Path(__file__).parent


def attack(name: str, problem_file: Path | None = None) -> str:
    """The control with the attack appended; `problem_file` fills the attack's @PROBLEM_FILE@ (the test's own copy)."""
    text = (HERE / "shared" / f"{name}.py").read_text()
    if problem_file is not None:
        text = text.replace("@PROBLEM_FILE@", str(problem_file))
    return f"{CONTROL}\n\n{text}"


def test_a_rewritten_problem_file_does_not_judge_the_next_reference(own_problem, options, without_readonly_mounts):
    original = own_problem.read_text()
    problem = load_problem(own_problem)  # loaded once, as the batch does
    first = evaluate(problem, attack("rewrite_problem_file", own_problem), "cpu", options)
    assert first.status == "incorrect", first.message  # its reference was judged by the text the job carries
    assert "rewrote_problem" in {flag.code for flag in first.flags}, first.flags  # caught, and put back
    assert own_problem.read_text() == original
    # Its strict re-evaluation (a fresh reference: other options) is judged by the problem, not the rewritten file.
    strict = evaluate(problem, attack("rewrite_problem_file", own_problem), "cpu", strict_options(options))
    assert not false_accept(strict), (strict.status, strict.speedup, strict.message)
    assert strict.status == "incorrect", strict.message


def test_a_rewritten_problem_file_does_not_fail_the_next_honest_candidate(own_problem, options):
    problem = load_problem(own_problem)
    untimed = options.model_copy(update={"timing": False})
    evaluate(problem, attack("rewrite_problem_file", own_problem), "cpu", untimed)
    reference_pool.close_all()  # as a new run, a resumed one, or the next batch over the same suite starts
    honest = evaluate(problem, CONTROL, "cpu", untimed)
    assert honest.status == "correct", honest.message
    assert not honest.flags, honest.flags  # the honest control changes no file, and nothing is set against it


# The device's memory: on the CPU the workers plan it for a simulated device (worker/device_memory.py), as the tests
# of judge/device_room.py do.
GIB = 1 << 30


@pytest.fixture
def simulated_device(tmp_path, monkeypatch, own_problem):
    directory = tmp_path / "device"
    directory.mkdir()
    (directory / "device.json").write_text(json.dumps({"capacity": 8 * GIB, "context": 64 << 20}))
    monkeypatch.setenv(device_memory.SIMULATED, str(directory))
    spares.close_all()  # started without it, they would see no device
    yield directory
    reference_pool.close_all()
    spares.close_all()


def test_a_poisoned_reference_cache_does_not_turn_a_failure_into_does_not_fit(own_problem, options, simulated_device):
    result = evaluate(load_problem(own_problem), attack("poison_reference_cache"), "cpu", options)
    assert result.status == "runtime_error", result.message


def test_a_poisoned_reference_cache_does_not_stop_the_next_honest_candidate(own_problem, options, simulated_device):
    problem = load_problem(own_problem)
    evaluate(problem, attack("poison_reference_cache"), "cpu", options)
    reference_pool.close_all()  # a new run, a resumed one, or a strict re-evaluation's reference (other options)
    honest = evaluate(problem, CONTROL, "cpu", options.model_copy(update={"timing": False}))
    assert honest.status == "correct", honest.message


@contextmanager
def lock_holder(own_problem: Path, options: EvalOptions, name: str, held: str):
    """The attack `name` evaluated in a thread while the block runs; yields its future, done once the block ends.

    The block starts once the attacker holds its locks (it writes `held` in the cache directory) and, leaving, tells
    it to let go.
    """
    holder = concurrent.futures.ThreadPoolExecutor(1)
    attacker = holder.submit(
        evaluate, load_problem(own_problem), attack(name), "cpu", options.model_copy(update={"lock_timeout_s": 2.0})
    )
    try:
        deadline = time.monotonic() + 60
        while not (options.cache_dir / held).exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (options.cache_dir / held).exists(), f"the attacker ({name}) never took the lock"
        yield attacker
    finally:
        options.cache_dir.mkdir(parents=True, exist_ok=True)
        (options.cache_dir / "release").write_text("")  # the attacker's hold ends
        attacker.result(timeout=600)
        holder.shutdown()


def another_problem(tmp_path: Path) -> Path:
    """A copy of the problem under another path: its own reference, as in a batch or on another GPU."""
    other = tmp_path / "other" / PROBLEM.name
    other.parent.mkdir()
    shutil.copy(PROBLEM, other)
    return other


def test_a_candidate_holding_the_timing_lock_does_not_time_out_another_evaluation(tmp_path, own_problem, options):
    other = another_problem(tmp_path)
    with lock_holder(own_problem, options, "hold_timing_lock", "turnstile-held"):
        # An honest candidate of another problem, evaluated meanwhile (a short lock timeout stands for the default).
        honest = evaluate(load_problem(other), CONTROL, "cpu", options.model_copy(update={"lock_timeout_s": 5.0}))
    assert honest.status == "correct", honest.message


@pytest.mark.parametrize(
    ("attacked", "status"),
    [
        ("kill_reference", "incorrect"),  # the reference lives on to judge it
        ("trace_namespace_init", "correct"),  # without capabilities it cannot trace the namespace's first process
    ],
)
def test_in_its_own_pid_namespace_a_candidate_reaches_neither_the_reference_nor_its_first_process(
    own_problem, options, attacked, status
):
    only_ns = options.model_copy(update={"pid_namespace": True, "timing": False})
    if not process.pid_namespace_available():
        pytest.skip("unshare cannot make a PID namespace here")
    result = evaluate(load_problem(own_problem), attack(attacked), "cpu", only_ns)
    assert result.status == status, result.message


@pytest.mark.xfail(
    strict=True,
    raises=EnvironmentFailure,
    reason="open: without a PID namespace (the silent fallback where unshare is refused) a candidate can signal the "
    "reference, a sibling of the same user; its death is raised as the machine's failure, not the candidate's verdict",
)
def test_without_a_pid_namespace_killing_the_reference_is_still_the_candidates_verdict(own_problem, options):
    no_ns = options.model_copy(update={"pid_namespace": False, "timing": False})
    result = evaluate(load_problem(own_problem), attack("kill_reference"), "cpu", no_ns)
    assert result.status in ("incorrect", "runtime_error"), result.message


def _end_escaped(cache_dir: Path) -> None:
    """End the grandchild an attack left running (its pid, as it wrote it), if it is still there."""
    marker = cache_dir / "escaped.pid"
    if marker.exists():
        try:
            os.kill(int(marker.read_text()), signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.parametrize(
    "namespace",
    [
        True,
        pytest.param(
            False,
            marks=pytest.mark.xfail(
                strict=True,
                reason="bounded (docs/CONTRACTS.md): without a PID namespace a grandchild that left the process group "
                "keeps its memory past the kill, and the candidate's shortage reads as the device's",
            ),
        ),
    ],
)
def test_memory_kept_by_an_escaped_child_is_still_the_candidates_shortage(
    own_problem, options, simulated_device, namespace
):
    if namespace and not process.pid_namespace_available():
        pytest.skip("unshare cannot make a PID namespace here")
    opts = options.model_copy(update={"pid_namespace": namespace})
    try:
        result = evaluate(load_problem(own_problem), attack("escape_and_hold_memory"), "cpu", opts)
    finally:
        _end_escaped(options.cache_dir)
    assert result.status == "runtime_error", result.message


DYING_PARENT = """
import json, sys, time
from evaluators import EvalOptions
from evaluators.judge.process import Worker
from evaluators.judge.toolchain import toolchain_key
given = json.load(sys.stdin)
worker = Worker("candidate", EvalOptions.model_validate(given["options"]), toolchain_key(), "cpu")
worker.call({"cmd": "ping"}, "pong", "startup")
job = given["job"] | {"candidate_source": given["source"]}
worker._send({"id": 1, "stage": "build", "cmd": "job", "job": job})  # its import hangs: no reply to wait for
print(worker.proc.pid, worker.scratch, flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize(
    ("replaced", "namespace"),
    [
        (None, True),
        ("outlive_parent", True),
        ("outlive_parent_dup2", True),
        (None, False),
        ("outlive_parent", False),
        pytest.param(
            "outlive_parent_dup2",
            False,
            marks=pytest.mark.xfail(
                strict=True,
                raises=AssertionError,
                reason="bounded (docs/CONTRACTS.md): without a PID namespace only the worker's own guard ends it, and "
                "it polls the control pipe by its descriptor number; a candidate that moves the pipe, puts a decoy it "
                "keeps open at that number and interrupts the waiting poll (Python polls again, on the decoy) "
                "outlives a parent that died",
            ),
        ),
    ],
)
def test_a_worker_whose_parent_died_ends_even_if_the_candidate_replaced_the_guard(
    own_problem, options, replaced, namespace
):
    if namespace and not process.pid_namespace_available():
        pytest.skip("unshare cannot make a PID namespace here")
    source = attack(replaced or "outlive_parent")
    if replaced is None:
        source = source.replace("_os.killpg = lambda *args: time.sleep(3600)\n", "")
    problem = load_problem(own_problem)
    job = {
        "device": "cpu", "problem": pack_problem(problem), "shapes": [s.to_json() for s in problem.shapes("cpu")],
        "cache_dir": str(options.cache_dir), **options.model_dump(include=WORKER_OPTIONS), "role": "candidate",
    }  # fmt: skip
    given = {"options": options.model_dump(mode="json") | {"pid_namespace": namespace}, "source": source, "job": job}
    # A real parent, killed: its death closes the control pipe and ends the thread that forked the worker.
    parent = subprocess.Popen([sys.executable, "-c", DYING_PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)  # fmt: skip
    parent.stdin.write(json.dumps(given))
    parent.stdin.close()
    started = parent.stdout.readline().split()
    assert started, "the parent did not start its worker"
    worker_pid, scratch = int(started[0]), Path(started[1])
    tree = {worker_pid}
    try:
        deadline = time.monotonic() + 60
        while not (scratch / "imported").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (scratch / "imported").exists(), "the candidate was not imported"
        tree |= pause.descendants(worker_pid)
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 10
        while any(map(alive, tree)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(map(alive, tree)), "the worker outlived its parent"
    finally:
        parent.kill()
        for pid in tree:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.mark.xfail(
    strict=True,
    reason="bounded: the cache flush of each timed repetition is sized by job['flush_mb'], data in the candidate's "
    "process that the integrity watch lets change; with it at 0 the calls run on warm caches and the parent's "
    "clock, calibrated by the reference's flushed repetitions, sees only a shorter span, the span of an honest "
    "kernel faster by the flush's length (docs/CONTRACTS.md, 'Harness work the candidate skips or overlaps')",
)
def test_the_candidates_timed_calls_run_after_the_parents_cache_flush(own_problem, options):
    options = options.model_copy(update={"flush_mb": 64})  # the parent's size, sent in the job
    result = evaluate(load_problem(own_problem), attack("skip_cache_flush"), "cpu", options)
    assert result.status == "correct" and not result.set_aside, result.message  # nothing noticed it
    assert int((options.cache_dir / "flush_mb_timed").read_text()) == options.flush_mb


def _mapped_mib(pid: int) -> float:
    """Resident MiB outside the malloc heap. Every 64 MiB tensor is a mapping of its own (past glibc's largest mmap
    threshold, 32 MiB), freed back to the system; the heap keeps what smaller allocations freed, and read 99 to 243
    MiB between one warm reference's evaluations (144 MiB of growth failed a full run)."""
    total, mapping = 0, ""
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        if not line[:1].isupper():  # a mapping's header line: its address range, ..., its name
            mapping = line
        elif line.startswith("Rss:") and not mapping.endswith("[heap]"):
            total += int(line.split()[1])
    return total / 1024


@pytest.mark.parametrize(
    "failing",
    [
        False,
        True,
    ],
)
def test_a_candidate_failing_mid_timing_leaves_nothing_in_the_warm_reference(own_problem, options, failing):
    text = own_problem.read_text().replace('"cpu": {"M": 8, "N": 64}', '"cpu": {"M": 4096, "N": 4096}')
    own_problem.write_text(text)  # 64 MiB outputs, three timed copies a shape on the CPU
    problem = load_problem(own_problem)
    opts = options.model_copy(update={"timeout_s": 60})
    honest = attack("crash_in_last_timing_block").replace(
        'raise RuntimeError("failed in its last timing block")', "pass"
    )
    for _ in range(2):  # warms the reference; the second replaces the outputs the first trials kept
        assert evaluate(problem, honest, "cpu", opts).status == "correct"
    (reference,) = [r for key, r in reference_pool._pool.items() if str(own_problem) in key]
    before = _mapped_mib(reference.worker.proc.pid)
    for _ in range(2):
        result = evaluate(problem, attack("crash_in_last_timing_block") if failing else honest, "cpu", opts)
        assert result.status == ("runtime_error" if failing else "correct"), result.message
    assert evaluate(problem, honest, "cpu", opts).status == "correct"  # the same warm reference, still serving
    grown = _mapped_mib(reference.worker.proc.pid) - before
    assert grown < 96, f"the warm reference grew by {grown:.0f} MiB"  # 2 failures x 3 copies x 64 MiB = 384 MiB


@pytest.mark.xfail(
    strict=True,
    reason="test model only: the simulated device's files are writable by the candidate, so on the CPU its failure "
    "can read as does_not_fit; a GPU's driver reading cannot be written, but the CPU tests prove less than they say",
)
def test_the_simulated_device_cannot_be_shrunk_by_the_candidate(own_problem, options, simulated_device):
    result = evaluate(load_problem(own_problem), attack("shrink_simulated_device"), "cpu", options)
    assert result.status == "runtime_error", result.message


SLOW_REFERENCE = """

import time as _time

_honest_forward = Model.forward


def _slow_forward(self, x):
    _time.sleep(1.0)  # a slow reference: an honest fast kernel is beyond the plausible 10x
    return _honest_forward(self, x)


Model.forward = _slow_forward
"""


def test_a_batchs_strict_run_does_not_clear_a_kernel_that_is_wrong_in_it(
    tmp_path, own_problem, options, without_readonly_mounts
):
    own_problem.write_text(own_problem.read_text() + SLOW_REFERENCE)
    problems = {"slow": load_problem(own_problem)}
    out = tmp_path / "out"
    out.mkdir()
    executor = LocalExecutor(["cpu"])
    try:
        rows = batch.judge(
            problems, {"slow": attack("rewrite_problem_before_strict", own_problem)}, out, executor, options,
            Console(file=io.StringIO()),
        )  # fmt: skip
    finally:
        executor.close()
    row = rows["slow"]
    # Its first run rewrote the problem file: set aside for good, so no strict run can clear it.
    assert "the candidate changed the problem's files" in row.set_aside and not row.rechecked, row
    assert not row.fast(1.0), row
    assert "_tampered_forward" not in own_problem.read_text()


def test_a_candidate_cannot_overwrite_another_evaluations_outputs(own_problem, options):
    honest = honest_beside(attack("overwrite_others_outputs"), "overwriting", own_problem, options)
    assert honest.status == "correct", honest.message


def test_a_module_planted_in_the_references_directory_does_not_run_there(own_problem, options, without_readonly_mounts):
    reference_pool.close_all()
    spares.close_all()
    opts = options.model_copy(update={"compile_baseline": True, "timeout_s": 120})
    result = evaluate(load_problem(own_problem), attack("plant_module_in_reference_cwd"), "cpu", opts)
    spares.close_all()
    (reference,) = reference_pool._pool.values()
    assert (reference.worker.scratch / "colorsys.py").exists(), "the attack found no reference's directory"
    # The directories beside it are this process's workers' alone: each process's sit in a root of its own.
    ran = list(reference.worker.scratch.parent.glob("ks-reference-*/ran-in-reference"))
    assert result.status == "incorrect", (result.message, ran)  # its timed outputs are zeros
    assert not ran, "the planted module ran in the reference"


def test_a_rewritten_problem_file_does_not_judge_the_next_run(own_problem, options, without_readonly_mounts):
    untimed = options.model_copy(update={"timing": False})
    original = own_problem.read_text()
    rewriter = evaluate(load_problem(own_problem), attack("rewrite_problem_file", own_problem), "cpu", untimed)
    assert rewriter.status == "incorrect" and "rewrote_problem" in {flag.code for flag in rewriter.flags}
    assert own_problem.read_text() == original  # put back once its processes were killed
    reference_pool.close_all()
    honest = evaluate(load_problem(own_problem), CONTROL, "cpu", untimed)  # the file loaded again, as a new run does
    assert honest.status == "correct", honest.message
    assert not honest.flags, honest.flags


def test_a_candidate_holding_a_device_lock_does_not_time_out_another_evaluation(tmp_path, own_problem, options):
    other = another_problem(tmp_path)
    honest_options = options.model_copy(update={"lock_timeout_s": 5.0})  # a short lock timeout stands for the default
    with lock_holder(own_problem, options, "hold_device_lock", "device-locks-held") as attacker:
        # Its wait runs out: not judged, so a batch or a resumed run judges it again; never the candidate's `timeout`.
        with pytest.raises(EnvironmentFailure, match=r"^not judged: the device's timing lock \(.*cpu\.lock\) was held"):
            evaluate(load_problem(other), CONTROL, "cpu", honest_options)
    own = attacker.result()
    # The attacker's own timing waits for the locks its process keeps: they come free once it is killed, so that
    # wait is its verdict.
    assert own.status == "timeout" and own.message.endswith("by the candidate's own process"), own.message
    honest = evaluate(load_problem(other), CONTROL, "cpu", honest_options)  # judged again once the lock is free
    assert honest.status == "correct", honest.message


def test_a_candidate_worker_that_did_not_start_is_not_judged(own_problem, options, monkeypatch):
    # On a GPU a device lock kept by another process holds a starting worker up past its startup limit (it takes the
    # lock shared, with no limit of its own); here a worker killed before it answers stands for it.
    untimed = options.model_copy(update={"timing": False})
    claim = spares.claim

    def dead_on_arrival(role, *args):
        worker = claim(role, *args)
        if role == "candidate":
            worker.kill()
        return worker

    monkeypatch.setattr(spares, "claim", dead_on_arrival)
    with pytest.raises(EnvironmentFailure, match=r"^not judged: the candidate's worker did not start: "):
        evaluate(load_problem(own_problem), CONTROL, "cpu", untimed)
    monkeypatch.setattr(spares, "claim", claim)
    assert evaluate(load_problem(own_problem), CONTROL, "cpu", untimed).status == "correct"
