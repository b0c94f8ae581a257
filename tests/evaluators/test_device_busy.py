"""Work that outlasts the reference's wait before a timing block (judge/evaluate.py, judge/timing_plan.DeviceBusy).

The reference is never timed beside it. Where the device goes idle once the candidate's processes are killed, the
work was the candidate's (nothing honest runs once its command has replied): its runtime_error. Otherwise the work is
someone else's, and the evaluation is not judged.
"""

import pytest

from evaluators import EvalOptions
from evaluators.judge import evaluate, timing_plan
from evaluators.judge.evaluate import EnvironmentFailure, Stopped
from evaluators.judge.process import Reply
from evaluators.judge.result import EvalResult, ShapeResult
from kernels.problem_types import Shape


class Candidate:
    killed = False

    def kill(self):
        self.killed = True


class Ask:
    def __init__(self):
        self.candidate, self.commands = Candidate(), []

    def __call__(self, command, event, stage):
        self.commands.append(command["cmd"])
        return Reply("released", {}, 0.0, 0.0)


class Reference:
    """Its drain finds the device idle once the candidate is killed, or not."""

    def __init__(self, idle_once_killed: bool, candidate: Candidate):
        self.idle_once_killed, self.candidate, self.drains = idle_once_killed, candidate, 0

    def request(self, command, event, stage="compare"):
        assert command["cmd"] == "drain" and self.candidate.killed  # asked again only once the candidate is gone
        self.drains += 1
        return Reply("drained", {"waited_ms": 0.0, "idle": self.idle_once_killed}, 0.0, 0.0)


def _busy(monkeypatch, idle_once_killed: bool):
    def timed(ask, reference, shape, options):
        raise timing_plan.DeviceBusy("the device was still busy after the reference waited 2001 ms")

    monkeypatch.setattr(evaluate, "_timed", timed)
    ask = Ask()
    reference = Reference(idle_once_killed, ask.candidate)
    result = EvalResult(status="correct", device="cuda")
    result.shapes.append(ShapeResult(name="s", kind="benchmark", status="correct"))
    shapes = [Shape("s", "benchmark")]
    return ask, reference, result, lambda: evaluate._timed_shapes(ask, reference, shapes, {}, {}, result, EvalOptions())


def test_work_that_ends_with_the_candidates_processes_is_the_candidates_runtime_error(monkeypatch):
    ask, reference, _, run = _busy(monkeypatch, idle_once_killed=True)
    with pytest.raises(Stopped) as stopped:
        run()
    verdict = stopped.value.result
    assert ask.candidate.killed and reference.drains == 1
    assert verdict.status == "runtime_error" and "left on the device after its command" in verdict.message
    assert verdict.speedup is None  # no figure from a timing that was never made


def test_work_that_outlives_the_candidates_processes_is_not_judged(monkeypatch):
    ask, reference, _, run = _busy(monkeypatch, idle_once_killed=False)
    with pytest.raises(EnvironmentFailure, match="not judged: the device was still busy"):
        run()
    assert ask.candidate.killed and reference.drains == 1
