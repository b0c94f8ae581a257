"""EvalResult and its parts: the record every caller of the evaluator reads."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Status = Literal["correct", "incorrect", "compile_error", "runtime_error", "timeout"]


class Roofline(BaseModel):
    """Achieved rates of one timed run against the device's peaks."""

    flops: int
    bytes: int
    dtype: str
    achieved_tflops: float
    achieved_gbps: float
    peak_tflops: float | None = None
    peak_gbps: float | None = None
    fraction: float | None = Field(None, description="roofline floor time / measured time; 1.0 is the bound")
    bound: Literal["compute", "memory"] | None = None
    peaks_source: str | None = None


class EvalResult(BaseModel):
    """The outcome of one evaluation: verdict, timings, flags and what a debugger needs."""

    status: Status
    speedup: float | None = None
    runtime_ms: float | None = None
    baseline_ms: float | None = None
    spread: float | None = Field(None, description="interquartile range of the candidate's times / median")
    suspicious: list[str] = Field(default_factory=list)
    message: str = ""
    diagnostics: str = ""
    device: str = "cpu"
    timing: Literal["cuda-events", "interpreter"] | None = None
    reps: int | None = Field(None, description="timed repetitions of the candidate")
    roofline: Roofline | None = None
    stages: dict[str, float] = Field(default_factory=dict, description="seconds per stage")
    source_hash: str = ""
    problem: str = ""
    config: str | None = None

    def summary_json(self) -> dict:
        """The CLI's JSON line: every field, with the contract's keys always present."""
        return self.model_dump(mode="json")
