"""Structured outputs of the LLM roles, as pydantic models the answers are parsed into.

- `Selection(base_id, reference_id, contrast, rationale)`: the selector's pick; a reference names its contrast
  with the base ("shape": stronger on other input shapes, "lineage": another line of descent).
- `Avenue(title, direction, citations)`: a broad direction, the designer's first stage; `Avenues(lesson, avenues)`:
  the whole first-stage answer, with what the difference between base and reference taught.
- `Anchor(start_line, end_line, note)`: a region of the base source a plan changes (agents.anchors has the format).
- `Plan(title, avenue, rubric, mechanism, expected_speedup_min, expected_speedup_max, risk, innovation, anchors,
  citations, from_reference)`: a concrete experiment, the designer's second stage; archived as a candidate's
  `experiment`; `from_reference` says what it borrows from the reference (None for nothing).
- `ChosenPlan(index, reason)`: a plan kept by the paper's rule (agents.choice).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

Contrast = Literal["shape", "lineage"]


class Selection(BaseModel):
    """The base version to improve, an optional contrasting reference, the kind of contrast, and why."""

    base_id: str
    reference_id: str | None = None
    contrast: Contrast | None = None
    rationale: str

    @model_validator(mode="after")
    def _reference_names_its_contrast(self) -> Selection:
        if self.reference_id is not None and self.contrast is None:
            raise ValueError("a reference_id needs its contrast: 'shape' or 'lineage'")
        if self.reference_id is None:
            self.contrast = None
        return self


class Avenue(BaseModel):
    """A broad direction of work on the base, grounded in the passages it cites."""

    title: str
    direction: str
    citations: list[str] = Field(default_factory=list)


class Avenues(BaseModel):
    """The first stage's answer: the avenues, and the lesson of the base/reference contrast (None without one)."""

    lesson: str | None = None
    avenues: list[Avenue]


class Anchor(BaseModel):
    """Lines `start_line`..`end_line` (1-based, inclusive) of the base source that a plan changes."""

    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)
    note: str = ""

    @model_validator(mode="after")
    def _ordered(self) -> Anchor:
        if self.start_line > self.end_line:
            raise ValueError(f"anchor start_line {self.start_line} is after end_line {self.end_line}")
        return self


class Plan(BaseModel):
    """One concrete change to the base: its rubric, expected uplift, risk, innovation and anchors."""

    title: str
    avenue: int | None = Field(None, description="1-based index of the avenue it develops")
    rubric: list[str] = Field(min_length=1, description="the code change, step by step")
    mechanism: str
    expected_speedup_min: float = Field(gt=0)
    expected_speedup_max: float = Field(gt=0)
    risk: Literal["low", "medium", "high"]
    innovation: int = Field(ge=1, le=10, description="1: a routine tweak, 10: unlike anything tried")
    anchors: list[Anchor] = Field(default_factory=list)
    citations: list[str] = Field(default_factory=list)
    from_reference: str | None = Field(None, description="what the plan borrows from the reference; null for nothing")

    @model_validator(mode="after")
    def _range_is_ordered(self) -> Plan:
        if self.expected_speedup_min > self.expected_speedup_max:
            raise ValueError(
                f"expected_speedup_min {self.expected_speedup_min} exceeds "
                f"expected_speedup_max {self.expected_speedup_max}"
            )
        return self


class ChosenPlan(BaseModel):
    """A plan the choice rule kept, and which part of the rule kept it."""

    index: int
    reason: str
