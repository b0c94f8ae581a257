"""Structured outputs of the LLM roles, as pydantic models the answers are parsed into.

- `Selection(base_id, reference_id, rationale)`: the selector's pick.
- `Experiment(title, change, mechanism, expected_speedup_min, expected_speedup_max, risk, citations)`.
- `HypothesisSet(experiments (>= 2), chosen (indices into experiments), choice_rule)`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator


class Selection(BaseModel):
    """The base version to improve, an optional contrasting reference, and why."""

    base_id: str
    reference_id: str | None = None
    rationale: str


class Experiment(BaseModel):
    """One proposed change to the base kernel, with its expected effect and its sources."""

    title: str
    change: str
    mechanism: str
    expected_speedup_min: float = Field(gt=0)
    expected_speedup_max: float = Field(gt=0)
    risk: Literal["low", "medium", "high"]
    citations: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _range_is_ordered(self) -> Experiment:
        if self.expected_speedup_min > self.expected_speedup_max:
            raise ValueError(
                f"expected_speedup_min {self.expected_speedup_min} exceeds "
                f"expected_speedup_max {self.expected_speedup_max}"
            )
        return self


class HypothesisSet(BaseModel):
    """Several proposed experiments and the indices of those chosen to run."""

    experiments: list[Experiment] = Field(min_length=2)
    chosen: list[int] = Field(min_length=1)
    choice_rule: str

    @model_validator(mode="after")
    def _chosen_are_valid_indices(self) -> HypothesisSet:
        count = len(self.experiments)
        bad = [index for index in self.chosen if not 0 <= index < count]
        if bad:
            raise ValueError(f"chosen indices {bad} are out of range 0..{count - 1}")
        if len(set(self.chosen)) != len(self.chosen):
            raise ValueError(f"chosen indices repeat: {self.chosen}")
        return self

    @property
    def chosen_experiments(self) -> list[Experiment]:
        """The chosen experiments, in the order chosen."""
        return [self.experiments[index] for index in self.chosen]
