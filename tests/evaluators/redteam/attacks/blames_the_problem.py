# Attack (blame shifted, class 5): its call raises the problem's own error type, so the worker reports a
# problem_error: the parent used to raise it out of evaluate() as the problem's fault (a batch then drops the row
# and judges it again), never a verdict against the candidate.
from kernels.problem_types import ProblemError

_Honest = ModelNew


class ModelNew(_Honest):
    def forward(self, x):
        raise ProblemError("the problem's inputs are malformed")
