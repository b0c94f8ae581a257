"""Turn (problem, candidate source, device) into a measured, trustworthy EvalResult."""

from evaluators.evaluate import evaluate
from evaluators.options import EvalOptions
from evaluators.result import EvalResult, Roofline

__all__ = ["EvalOptions", "EvalResult", "Roofline", "evaluate"]
