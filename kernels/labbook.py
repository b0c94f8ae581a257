"""The lab book beside the archive: every iteration's design (avenues, plans, the chosen ones) and the findings.

Contract (used by `agents/` and `graph/`):

- `DesignRecord`: `iteration`, `strategy`, `base_id`, `reference_id`, `contrast`, `rationale`, `target` (the
  architecture designed for), `lesson` (what the base/reference difference taught the designer), `avenues` and
  `plans` (dumps of `agents.schemas.Avenue` / `Plan`, chosen or not), `chosen` ([{"index", "reason"}]),
  `profile` (the base's profiler summary the designer read), `diversity` (agents.population.diversity).
- `Finding`: `candidate_id`, `iteration`, `text`: one line on what the candidate's measured outcome teaches.
- `LabBook(run_dir)`: `designs.jsonl` and `findings.jsonl` in the run directory, append-only like the archive;
  `.add_design(record)` and `.add_finding(finding)` ignore a second record for the same iteration / candidate
  (a resumed run records again), `.designs`, `.findings` ({candidate_id: text}).
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, Field

DESIGNS_FILE = "designs.jsonl"
FINDINGS_FILE = "findings.jsonl"


class DesignRecord(BaseModel):
    """One iteration's design: the selection it started from, every avenue and plan, and which plans ran."""

    iteration: int
    strategy: str = "scientist"
    base_id: str
    reference_id: str | None = None
    contrast: str | None = None
    rationale: str = ""
    target: str = ""
    lesson: str | None = None
    avenues: list[dict] = Field(default_factory=list)
    plans: list[dict] = Field(default_factory=list)
    chosen: list[dict] = Field(default_factory=list)
    profile: str = ""
    diversity: dict = Field(default_factory=dict)


class Finding(BaseModel):
    """What one candidate's measured outcome teaches, in one line."""

    candidate_id: str
    iteration: int
    text: str


def _read(path: Path, model: type[BaseModel]) -> list:
    if not path.exists():
        return []
    return [model.model_validate_json(line) for line in path.read_text().splitlines() if line.strip()]


def _append(path: Path, record: BaseModel) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        handle.write(json.dumps(record.model_dump(), sort_keys=True) + "\n")


class LabBook:
    """Designs and findings of one run, reloaded from its directory."""

    def __init__(self, run_dir: Path | str):
        self.run_dir = Path(run_dir)
        self.designs: list[DesignRecord] = _read(self.run_dir / DESIGNS_FILE, DesignRecord)
        self._findings: list[Finding] = _read(self.run_dir / FINDINGS_FILE, Finding)

    @property
    def findings(self) -> dict[str, str]:
        """Each candidate's finding, in the order written."""
        return {finding.candidate_id: finding.text for finding in self._findings}

    def add_design(self, record: DesignRecord) -> None:
        """Append an iteration's design, once."""
        if any(design.iteration == record.iteration for design in self.designs):
            return
        self.designs.append(record)
        _append(self.run_dir / DESIGNS_FILE, record)

    def add_finding(self, finding: Finding) -> None:
        """Append a candidate's finding, once."""
        if finding.candidate_id in self.findings:
            return
        self._findings.append(finding)
        _append(self.run_dir / FINDINGS_FILE, finding)
