"""`python tests/graph/fault_runner.py GRAPH_RUN_ARGS...`: graph.run with one fault injected where KS_TEST_FAULT says.

KS_TEST_FAULT is "KIND:N[:SIGNAL]": `node` (the Nth node update streamed: its writes are saved) or `evaluation`
(the Nth evaluation has started and runs on) sends SIGNAL (SIGINT, SIGTERM or SIGKILL) to this process; `llm`
makes the Nth model call fail as a revoked API key does; `worker` kills the reference process during the Nth
evaluation. Every finished evaluation is appended to KS_TEST_EVAL_LOG ("eval SHA1 STRICT STATUS", STRICT "control"
for the reference judged strictly as itself), and the fault, when it fires, as "fault KIND WHERE".
"""

import hashlib
import os
import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import evaluators  # noqa: E402
from agents.cassette import ReplayChatModel  # noqa: E402
from evaluators.judge.reference_pool import ReferenceWorker  # noqa: E402
from graph import run  # noqa: E402
from graph.progress import Progress  # noqa: E402
from kernels.problem import load_problem  # noqa: E402
from kernels.problem_types import Problem  # noqa: E402

KIND, N, *SIGNAL = os.environ.get("KS_TEST_FAULT", "none:0").split(":")
KILLS_WORKER = KIND == "worker"
COUNTED = "evaluation" if KILLS_WORKER else KIND  # the worker dies inside the Nth evaluation
LOG = Path(os.environ["KS_TEST_EVAL_LOG"])
counts = {"node": 0, "evaluation": 0, "llm": 0}
lock = threading.Lock()
doomed: set[int] = set()  # threads whose evaluation must lose its reference process


def log(line: str) -> None:
    with LOG.open("a") as out:
        out.write(line + "\n")


def due(kind: str) -> bool:
    """Count one `kind` event; true when it is the one the fault waits for."""
    with lock:
        counts[kind] += 1
        return COUNTED == kind and counts[kind] == int(N)


def fire(where: str) -> None:
    log(f"fault {KIND} {where}")
    os.kill(os.getpid(), getattr(signal, SIGNAL[0]))


real_handle = Progress.handle


def handle(self, namespace, mode, chunk):
    real_handle(self, namespace, mode, chunk)
    if mode == "updates" and due("node"):
        fire(",".join(chunk))


real_evaluate = evaluators.evaluate


def evaluate(problem, source, device="auto", options=None):
    if due("evaluation"):
        if KILLS_WORKER:
            doomed.add(threading.get_ident())
        else:
            fire(f"evaluation {counts['evaluation']}")
    result = real_evaluate(problem, source, device, options)
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    log(f"eval {digest} {_kind(problem, source, options)} {result.status}")
    return result


def _kind(problem, source: str, options) -> str:
    """False, True (strict) or control: every candidate's control has the one source, the problem's reference."""
    strict = bool(options and options.strict)
    problem = problem if isinstance(problem, Problem) else load_problem(problem)
    return "control" if strict and source == problem.reference_as_candidate() else str(strict)


real_request = ReferenceWorker.request


def reference_request(self, command, event, stage="compare"):
    if threading.get_ident() in doomed:
        doomed.discard(threading.get_ident())
        log(f"fault worker evaluation {counts['evaluation']}")
        os.killpg(self.worker.proc.pid, signal.SIGKILL)
    return real_request(self, command, event, stage)


real_generate = ReplayChatModel._generate


class RevokedKey(Exception):
    """What an SDK raises for a key that stopped working (the retry loop reads status_code)."""

    status_code = 401


def generate(self, messages, stop=None, run_manager=None, **kwargs):
    if due("llm"):
        log(f"fault llm call {counts['llm']}")
        raise RevokedKey("API key not valid. Please pass a valid API key.")
    return real_generate(self, messages, stop=stop, run_manager=run_manager, **kwargs)


Progress.handle = handle
evaluators.evaluate = evaluate
ReferenceWorker.request = reference_request
ReplayChatModel._generate = generate

if __name__ == "__main__":
    sys.exit(run.main(sys.argv[1:]))
