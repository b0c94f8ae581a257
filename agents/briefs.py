"""What the roles are told about the problem and about a candidate: small pydantic briefs the graph fills.

- `ProblemBrief(name, doc, source, device, roofline)`: `roofline` is the problem's {"flops", "bytes"} at the
  device's configuration, or None.
- `CandidateBrief(id, source, speedup, runtime_ms, roofline_fraction, bound, status, shapes)`; `from_record(record)`
  reads them from an archived candidate and its `EvalResult` dump (`shapes`: speedup per benchmark shape).
"""

from __future__ import annotations

from pydantic import BaseModel

from agents.population import shape_speedups
from kernels.archive import CandidateRecord

# The evaluator's roofline dict names the fraction of peak; accept the spellings it has used.
FRACTION_KEYS = ("fraction_of_peak", "fraction", "peak_fraction")


class ProblemBrief(BaseModel):
    """The problem as the roles see it."""

    name: str
    doc: str = ""
    source: str
    device: str = "cuda"
    roofline: dict | None = None


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

    @classmethod
    def from_record(cls, record: CandidateRecord) -> CandidateBrief:
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
        )
