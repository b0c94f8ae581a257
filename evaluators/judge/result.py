"""EvalResult and its parts: the record every caller of the evaluator reads."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, PrivateAttr, computed_field

from evaluators.judge.flags import Flag, sets_aside

# does_not_fit: one call's inputs and outputs, the cache flush and the reference need more than the device has free,
# the harness's idle workers ended and the candidate's process gone (judge/device_room.py): the machine's limit, not
# the candidate's.
Status = Literal["correct", "incorrect", "compile_error", "runtime_error", "timeout", "does_not_fit"]


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


class WallCheck(BaseModel):
    """The parent's clock against the candidate's own timer at one shape (judge/wall.py), in ms per call."""

    parent_ms: float = Field(description="the parent's figure: its clock around the timing commands, less the harness")
    claimed_ms: float = Field(description="what the candidate's process said, with its counted side-stream work")
    slack_ms: float = Field(description="how far below parent_ms an honest timer may claim")
    issue_ms: float | None = Field(None, description="the candidate's median host time to issue a call, as it said")
    reference_issue_ms: float | None = Field(None, description="the reference's, from its own (trusted) process")
    command_ms: float | None = Field(None, description="the reference's timing command with no repetition, whole")
    ping_ms: float | None = Field(None, description="the reference's answer to a command it does nothing for")
    harness_ms: float | None = Field(None, description="the harness's own work per repetition, by the reference's")
    seal_ms: float | None = Field(None, description="the reference's seal per repetition: the outputs' handoff")
    seal_excess_ms: float | None = Field(None, description="the candidate's seal per call beyond the reference's")
    pin_ms: float | None = Field(None, description="the reference's pin of its own outputs per repetition pinned")
    pin_excess_ms: float | None = Field(None, description="the pin of the candidate's blocks per call beyond it")
    open_ms: float | None = Field(None, description="the pin's IPC open of one of the candidate's outputs, a median")
    watch_ms: float | None = Field(None, description="the reference's watch of its own blocks: what its watcher lost")
    watch_excess_ms: float | None = Field(
        None, description="what another context took of the candidate's host windows per call, beyond it and a switch"
    )


class ShapeResult(BaseModel):
    """One shape's outcome: test shapes are only checked; benchmark shapes are checked and timed."""

    name: str
    kind: Literal["benchmark", "test"]
    status: Status | None = None
    runtime_ms: float | None = None
    baseline_ms: float | None = None
    speedup: float | None = None
    speedup_band: tuple[float, float] | None = Field(
        None, description="the speedup's 95 % noise band, from a bootstrap of the timing's blocks (judge/bands.py)"
    )
    process_floor: float | None = Field(
        None,
        description="the share two processes may differ by on this call, held inside the band (judge/bands.py)",
    )
    band_within: tuple[float, float] | None = Field(
        None,
        description="the band from the timing's own blocks, before the process floor was added: what another floor "
        "would be added to (judge/bands.py)",
    )
    host_speed_ratio: float | None = Field(
        None, description="the two processes' host speeds apart, by which a host-bound call's band was widened"
    )
    spread: float | None = None
    reps: int | None = None
    roofline_fraction: float | None = None
    roofline: Roofline | None = None
    compiled_ms: float | None = Field(None, description="torch.compile(reference), when the baseline was asked for")
    speedup_vs_compile: float | None = None
    own_kernel_share: float | None = Field(
        None, description="share of a profiled call's device time (interpreter: host time) in the candidate's kernels"
    )
    wall: WallCheck | None = None
    _band_draws: list[float] = PrivateAttr(default_factory=list)  # the band's replicates, for the geometric mean's
    message: str = ""


class EvalResult(BaseModel):
    """The outcome of one evaluation: verdict, timings, flags and what a debugger needs.

    With several benchmark shapes, `speedup` is their geometric mean and `runtime_ms` / `baseline_ms` /
    `roofline` are the first benchmark shape's; `shapes` holds each one.
    """

    status: Status
    speedup: float | None = None
    runtime_ms: float | None = None
    baseline_ms: float | None = None
    speedup_vs_compile: float | None = Field(
        None, description="geometric mean over benchmark shapes of torch.compile(reference) time / candidate time"
    )
    compiled_ms: float | None = Field(None, description="torch.compile(reference) at the first benchmark shape")
    compile_baseline_error: str = Field("", description="why torch.compile(reference) could not be timed")
    spread: float | None = Field(None, description="interquartile range of the candidate's times / median")
    speedup_band: tuple[float, float] | None = Field(
        None, description="the 95 % noise band of `speedup` (the geometric mean's, drawn jointly over shapes)"
    )
    significant: bool | None = Field(
        None, description="whether the band excludes 1.0; False reads as no significant change from the reference"
    )
    flags: list[Flag] = Field(default_factory=list)
    own_kernel_share: float | None = Field(
        None,
        description="the least over benchmark shapes of a profiled call's device time (interpreter: host time) in "
        "the candidate's own kernels; None where it was not measured (judge/verdicts.py judge_evidence)",
    )
    shapes: list[ShapeResult] = Field(default_factory=list)
    strict: bool = Field(False, description="a strict re-evaluation: every timed output checked, more trials")
    trial_seed: int | None = Field(
        None, description="the correctness trials' base seed, drawn for this evaluation (EvalOptions.trial_seed redoes)"
    )
    message: str = ""
    diagnostics: str = ""
    device: str = "cpu"
    node: str = Field("", description="the host the evaluation ran on (set by the executor)")
    gpu: str = Field("", description='the GPU both workers ran on, model and index ("NVIDIA H200 #3"), or "cpu"')
    timing: Literal["cuda-events", "interpreter"] | None = None
    reps: int | None = Field(None, description="timed repetitions of the candidate")
    roofline: Roofline | None = None
    stages: dict[str, float] = Field(default_factory=dict, description="seconds per stage")
    reference_warm: bool | None = Field(
        None, description="whether the problem's reference worker was already running when this evaluation began"
    )
    source_hash: str = ""
    problem: str = ""
    config: str | None = None

    @computed_field
    @property
    def suspicious(self) -> list[str]:
        """Every flag's sentence (the CLI contract's list of strings)."""
        return [flag.text for flag in self.flags]

    @computed_field
    @property
    def set_aside(self) -> str | None:
        """Why a correct candidate is not trusted as measured: its hard flags, less those a strict run vouches for."""
        hard = [flag.text for flag in self.flags if sets_aside(flag, self.strict)]
        return "; ".join(hard) if hard and self.status == "correct" else None

    def flag(self, code: str, text: str) -> None:
        """Add a flag once."""
        if all(existing.text != text for existing in self.flags):
            self.flags.append(Flag.make(code, text))

    def summary_json(self) -> dict:
        """The CLI's JSON line: every field, with the contract's keys always present."""
        return self.model_dump(mode="json")
