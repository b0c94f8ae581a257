"""Worker process (`python -m evaluators.worker CHANNEL_FD CONTROL_FD ROLE [spare]`): the reference or a candidate.

It answers the parent's commands, one reply each (worker/replies.py): a ping once started, then its job, then what
its role serves (worker/reference.py, worker/candidate.py). Tensors never cross the channel. Clocks and the
load_inline wrapper are installed before candidate code is imported.
"""

from __future__ import annotations

import os
import resource
import sys
import traceback
from pathlib import Path

import torch

from evaluators.worker import buildshim, device_memory, early_context, kernel_warmup, orphan_guard, startup_priority
from evaluators.worker.device_lock import starting_worker_lock
from evaluators.worker.replies import Replies
from kernels.problem_types import ProblemError


def error_report(exc: BaseException, stage: str, shape: str | None = None) -> dict:
    """What the parent needs to classify and explain a failure."""
    if isinstance(exc, ProblemError):
        kind = "problem_error"
    elif _is_compile_error(exc):
        kind = "compile_error"
    else:
        kind = "runtime_error"
    if isinstance(exc, SystemExit):
        message = f"candidate code called sys.exit({exc.code!r})"
    else:
        message = f"{type(exc).__name__}: {exc}"
    return {
        "kind": kind,
        "stage": stage,
        "shape": shape,
        "unsupported": isinstance(exc, buildshim.UnsupportedOnDevice),
        "out_of_memory": isinstance(exc, torch.OutOfMemoryError),
        "message": message[:4000],
        "traceback": "".join(traceback.format_exception(exc))[-6000:],
    }


def _is_compile_error(exc: BaseException) -> bool:
    if isinstance(exc, (SyntaxError, ImportError, buildshim.BuildFailure)):
        return True
    if type(exc).__module__.startswith("triton.compiler"):
        return True
    return "Error building extension" in str(exc)


def _first_to_go_when_memory_runs_out() -> None:
    """Ask the kernel's out-of-memory killer to pick a worker first, never the run or batch that started it.

    A candidate that eats all host memory then dies as its own runtime_error; raising one's own score needs no
    privilege. Where /proc is not Linux's, nothing is done.
    """
    try:
        with open("/proc/self/oom_score_adj", "w") as score:
            score.write("1000")
    except OSError:
        pass


def _import_what_a_job_may_need(role: str) -> None:
    """A spare's, while it waits: its role's module, and the extension builder and Triton a candidate may use.

    Only a spare: a CLI's workers have their job at once, and these imports were 0.2-0.3 s of a cold evaluation's
    path on an H200, for candidates and references that use neither (docs/BENCHMARKS_HISTORY.md). A job that needs one
    imports it then; the worker wraps both as they are imported (worker/on_import.py).
    """
    from torch.utils import cpp_extension  # noqa: F401

    if role == "reference":
        import evaluators.worker.reference  # noqa: F401

        return
    import evaluators.worker.candidate  # noqa: F401

    try:
        import triton  # noqa: F401
    except ImportError:
        pass  # no Triton: a candidate that needs it fails in its build, as before


def main(argv: list[str]) -> None:
    """Open the device, then answer commands from fd argv[2] over fd argv[1] until the parent closes the pipe.

    argv[3] is the side channel (judge/process.py): a candidate's marks of its blocks' ends, a reference's socket for
    the read ends of them. argv[4] is the role the worker will be given a job for: "reference" or "candidate";
    argv[5], "spare" when it may wait a while for that job.
    """
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a segfaulting candidate leaves no core file
    _first_to_go_when_memory_runs_out()
    replies = Replies(int(argv[1]), int(argv[2]), int(argv[3]))
    orphan_guard.start(int(argv[2]))
    if torch.cuda.is_available():
        # The CUDA context, made while the process waits as a spare, never while another process times on this GPU:
        # contexts opening beside a timed GEMM moved its median by 14 % (bench/probes/timing_noise.py). Mostly opened
        # already, while torch imported; torch's own state (its runtime, allocator) starts here.
        early_context.wait()
        with starting_worker_lock():
            torch.empty(1, device="cuda")
        kernel_warmup.start(argv[4])
    else:
        device_memory.open_simulated()  # a test's simulated device, where one is named: this process's context on it
    if argv[5:] == ["spare"]:
        _import_what_a_job_may_need(argv[4])
    command = replies.next_command()
    while command is not None and command["cmd"] == "ping":  # started and listening
        replies.reply("pong", {"pid": os.getpid()})  # in its PID namespace: the parent finds it in its own
        command = replies.next_command()
    if command is None:
        os._exit(0)  # a spare nobody claimed
    startup_priority.normal_again()
    job = command["job"]
    stage = "startup"
    try:
        from evaluators.worker.session import Session

        session = Session(job, replies)
        buildshim.install(session.device, Path(job["cache_dir"]))
        if job["role"] == "reference":
            from evaluators.worker.reference import serve_reference as serve
        else:
            from evaluators.worker.candidate import serve_candidate as serve

            kernel_warmup.wait()  # its kernels loaded before the candidate's code runs, unless a timing holds them
        session.stage = "build" if job["role"] == "candidate" else "reference"
        serve(session)
    except BaseException as exc:  # everything, sys.exit included, becomes a report; the parent decides
        stage, shape = (session.stage, session.shape_name) if "session" in locals() else (stage, None)
        try:
            replies.reply("error", error_report(exc, stage, shape))
        except RuntimeError:
            pass  # no command is waiting for an answer: the parent hears of it when the pipe closes
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip interpreter teardown and any atexit hooks the candidate registered
