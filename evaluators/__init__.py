"""Turn (problem, candidate source, device) into a measured, trustworthy EvalResult."""

from evaluators.judge.evaluate import evaluate
from evaluators.judge.options import EvalOptions
from evaluators.judge.result import EvalResult, Roofline

__all__ = ["EvalOptions", "EvalResult", "Roofline", "evaluate"]
