"""What the roles are told about the problem and about a candidate: small pydantic briefs the graph fills.

- `ProblemBrief(name, doc, source, device, roofline, format)`: `roofline` is the problem's {"flops", "bytes"} at
  the device's configuration, or None; `format` ("kernelbench" or "gpumode") decides `candidate_form`, the
  sentence telling the implementer and the debugger what the candidate module defines.
- `CandidateBrief(id, source, speedup, runtime_ms, roofline_fraction, bound, status, shapes, lineage)`;
  `from_record(record, lineage="")` reads them from an archived candidate and its `EvalResult` dump (`shapes`:
  speedup per benchmark shape; `lineage`: its line of ancestors as `agents.notebook.lineage_line` writes it).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from agents.population import shape_speedups
from kernels.archive import CandidateRecord

# What a candidate module defines, per problem format (the implementer's and the debugger's prompts say it).
CANDIDATE_FORMS = {
    "kernelbench": "The module defines `class ModelNew(nn.Module)` with the same constructor arguments and `forward` "
    "signature as `Model`, and gives the same outputs within tolerance.",
    "gpumode": "The module defines `custom_kernel(data)`: it takes the data `generate_input` returns (unpack it as "
    "`ref_kernel` does, and fill any output buffer handed over) and returns what `ref_kernel` returns, within "
    "tolerance; it may import from `task` and `reference`.",
}
# The evaluator's roofline dict names the fraction of peak; accept the spellings it has used.
FRACTION_KEYS = ("fraction_of_peak", "fraction", "peak_fraction")


class ProblemBrief(BaseModel):
    """The problem as the roles see it."""

    name: str
    doc: str = ""
    source: str
    device: str = "cuda"
    roofline: dict | None = None
    format: Literal["kernelbench", "gpumode"] = "kernelbench"

    @property
    def candidate_form(self) -> str:
        """What the candidate module must define, in one sentence for the prompts."""
        return CANDIDATE_FORMS[self.format]

    @property
    def candidate_entry(self) -> str:
        """The text an answer's source must contain to be a candidate: its entry point's definition."""
        return "def custom_kernel" if self.format == "gpumode" else "class ModelNew"


class CandidateBrief(BaseModel):
    """A candidate as the roles see it: its source and what was measured."""

    id: str
    source: str
    speedup: float | None = None
    runtime_ms: float | None = None
    roofline_fraction: float | None = None
    bound: str | None = None
    status: str = "correct"
    shapes: dict[str, float] = {}
    lineage: str = ""

    @classmethod
    def from_record(cls, record: CandidateRecord, lineage: str = "") -> CandidateBrief:
        """The brief of an archived candidate, with the roofline numbers of its evaluation when there are any."""
        roofline = record.eval.get("roofline") or {}
        fraction = next((roofline[key] for key in FRACTION_KEYS if roofline.get(key) is not None), None)
        return cls(
            id=record.id,
            source=record.source,
            speedup=record.speedup,
            runtime_ms=record.runtime_ms,
            roofline_fraction=fraction,
            bound=roofline.get("bound"),
            status=record.status,
            shapes=shape_speedups(record),
            lineage=lineage,
        )
