"""The reference's expected outputs: kept where the plan leaves them room, otherwise computed again when compared."""

import os
from pathlib import Path
from types import SimpleNamespace

import torch

from evaluators.worker.compare import judge
from evaluators.worker.handoff import Handed, output_name, write_outputs
from evaluators.worker.reference import ReferenceModels, expected_outputs
from kernels.problem import load_problem
from kernels.runtime import problem_runtime

PROBLEM = Path(__file__).parent / "problems" / "shaped_scale.py"
TRIALS = 3


class CountingRuntime:
    """The problem's runtime, its references' calls counted."""

    def __init__(self):
        self.inner = problem_runtime(load_problem(PROBLEM), "cpu")
        self.calls = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def reference(self, seed: int):
        model = self.inner.reference(seed)

        def counted(*args):
            self.calls += 1
            return model(*args)

        return counted


def _expected(on_device: bool):
    runtime = CountingRuntime()
    session = SimpleNamespace(
        runtime=runtime,
        device="cpu",
        job={"seed": 7, "trial_seed": 8, "trials": TRIALS},
        shapes=load_problem(PROBLEM).shapes("cpu"),
    )
    expected, meta = expected_outputs(session, {"expected_on_device": on_device}, ReferenceModels(session))
    return expected, meta, runtime


def test_outputs_without_room_are_computed_again_when_compared_and_equal_the_kept_ones():
    kept, kept_meta, runtime = _expected(on_device=True)
    assert runtime.calls == TRIALS * len(kept)
    computed, meta, runtime = _expected(on_device=False)
    assert runtime.calls == len(computed)  # only each shape's first trial, for its sizes and dtype
    assert meta == kept_meta
    for shape, trials in enumerate(computed):
        assert all(callable(t) for t in trials) and len(trials) == TRIALS
        for t, outputs in enumerate(trials):
            (want,) = kept[shape][t]
            (got,) = outputs()
            assert torch.equal(got, want)
    assert runtime.calls == len(computed) * (1 + TRIALS)


def test_a_computed_expectation_judges_as_a_kept_one():
    computed, _, runtime = _expected(on_device=False)
    shape = 0
    kept = [t() for t in computed[shape]]
    items = []
    for t, outputs in enumerate(kept):
        name = output_name(shape, "trial", t)
        wrong = outputs[0].clone()
        if t == 2:
            wrong[0, 0] += 1.0
        items.append((Handed(os.getpid(), write_outputs(name, [wrong]), name), computed[shape][t]))
    calls = runtime.calls
    try:
        verdicts = judge(items, None, None, 1 << 20, "cpu", 1 << 20)
    finally:
        for handed, _ in items:
            os.close(handed.fd)
    assert verdicts[:2] == [None, None] and "1 of" in verdicts[2]["summary"]
    assert runtime.calls == calls + TRIALS  # each computed once, when its trial was compared
