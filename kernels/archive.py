"""The archive: every candidate tried, its parent, its outcome; append-only JSON lines, reloadable.

Contract (used by `agents/` and `graph/`):

- `CandidateRecord` (pydantic): `id` ("c0007"), `parent_id`, `reference_id`, `iteration`, `slot`, `source`,
  `experiment` (an `agents.schemas.Experiment` dump, or None), `status` (an evaluator status, or "seed" /
  "reference"), `speedup`, `runtime_ms`, `eval` (an `EvalResult.model_dump()`: kernels imports nothing of
  ours, so results are plain dicts), `debug_attempts`, `note` (e.g. "selector fell back to best"),
  `created_at` (UTC, ISO 8601); `set_aside` (why a correct candidate's measurement is not trusted, or None),
  `cleared_by_strict` and `strict_eval` (the strict re-evaluation, when one ran); `control_eval` (the control: the
  reference judged strictly as itself, when the two runs confirmed a gain);
  `counted` and `measured` (the figures that count: the first evaluation's, or where a strict run cleared or confirmed
  it, the two together, `two_runs`, their bands widened by the control's spread where one ran). A record set aside is
  never best, base or headline; records from before these fields read as not set aside.
- `Archive(path=None)`: in memory when `path` is None, else one JSON object per line at `path`, loaded on
  open and appended to on `add`, so a crashed run loses at most the record being written.
  `.add(record) -> record`, `.get(id)`, `.records`, `.best()` (highest speedup among eligible),
  `.correct()`, `.eligible()` (correct and not set aside), `.set_aside()`, `.recent_failures(n)`,
  `.lineage(id)` (root first), `.next_id()`, `len(archive)`.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

# Statuses the evaluator reports for a candidate that did not produce a correct result.
FAILED_STATUSES = frozenset({"incorrect", "compile_error", "runtime_error", "timeout"})


class ArchiveError(ValueError):
    """An archive that cannot be read or a record that cannot be added; the message is one line."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def two_runs(first: dict, second: dict) -> dict:
    """What two correct runs of one candidate, each in processes of its own, vouch for together (a result's dict).

    The figures are those of the run with the lesser speedup, and every band, the whole's and each shape's, spans both
    runs' bands: a change is significant only where both runs' bands exclude 1.0 on the same side. A run's band sees
    only its own processes, and the same kernel can run up to 38 % apart in two (docs/BENCHMARKS.md); kept as the better
    of two, a flag or a lucky draw would buy a second draw of the noise. A run with no finite, positive figure leaves
    the other's; a band missing or malformed in either run leaves the pair without one. evaluators.judge.strict decides
    by this rule too.
    """
    if not _figure(first.get("speedup")) or not _figure(second.get("speedup")):
        return second if _figure(second.get("speedup")) else first
    lesser, other = (first, second) if first["speedup"] <= second["speedup"] else (second, first)
    band = _spanning(lesser.get("speedup_band"), other.get("speedup_band"))
    others = {shape.get("name"): shape for shape in other.get("shapes") or []}
    shapes = [
        shape
        | {"speedup_band": _spanning(shape.get("speedup_band"), others.get(shape.get("name"), {}).get("speedup_band"))}
        for shape in lesser.get("shapes") or []
    ]
    significant = None if band is None else not band[0] <= 1.0 <= band[1]
    return lesser | {"speedup_band": band, "significant": significant, "shapes": shapes}


def _figure(speedup) -> bool:
    return isinstance(speedup, int | float) and math.isfinite(speedup) and speedup > 0


def _spanning(band, other) -> list[float] | None:
    """The band spanning both, or None where either is missing or is not two finite ends in order."""
    if not (_valid(band) and _valid(other)):
        return None
    return [min(band[0], other[0]), max(band[1], other[1])]


def _valid(band) -> bool:
    return band is not None and len(band) == 2 and all(map(math.isfinite, band)) and band[0] <= band[1]


class CandidateRecord(BaseModel):
    """One candidate kernel and what became of it."""

    id: str
    parent_id: str | None = None
    reference_id: str | None = None
    iteration: int = 0
    slot: int = 0
    source: str
    experiment: dict | None = None
    status: str
    speedup: float | None = None
    runtime_ms: float | None = None
    eval: dict = Field(default_factory=dict)
    debug_attempts: int = 0
    note: str = ""
    created_at: str = Field(default_factory=_now)
    set_aside: str | None = Field(None, description="why a correct candidate's speed is not trusted (hard flags)")
    cleared_by_strict: bool = Field(False, description="a strict re-evaluation cleared its first evaluation")
    strict_eval: dict = Field(default_factory=dict, description="the strict re-evaluation's result, if one ran")
    control_eval: dict = Field(
        default_factory=dict, description="the control's result (the reference judged as itself), if one ran"
    )
    counted: dict = Field(
        default_factory=dict,
        description="the figures that count: `eval`, or it and `strict_eval` together (two_runs), widened by a control",
    )

    @property
    def is_correct(self) -> bool:
        """True for candidates whose output matched the reference (seeds and references count once measured)."""
        return self.status in ("correct", "seed", "reference") and self.speedup is not None

    @property
    def measured(self) -> dict:
        """The evaluation whose figures count (`speedup` is its): `counted`, as the evaluator's strict rule decided.

        Records from before `counted` read `eval`, or where a strict run cleared them, the two runs together.
        """
        if self.counted:
            return self.counted
        if self.cleared_by_strict and self.strict_eval:
            return two_runs(self.eval, self.strict_eval)
        return self.eval

    @property
    def is_eligible(self) -> bool:
        """Correct and not set aside: it may be the best kernel, a base for the selector, the headline."""
        return self.is_correct and self.set_aside is None

    @property
    def is_failure(self) -> bool:
        """True when the evaluator rejected the candidate."""
        return self.status in FAILED_STATUSES


class Archive:
    """The population of candidates, with lineage, persisted as append-only JSON lines."""

    def __init__(self, path: Path | str | None = None):
        self.path = Path(path) if path is not None else None
        self._records: dict[str, CandidateRecord] = {}
        if self.path is not None and self.path.exists():
            self._load(self.path)

    def _load(self, path: Path) -> None:
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = CandidateRecord.model_validate_json(line)
            except ValidationError as error:
                first = error.errors()[0]
                raise ArchiveError(f"{path}:{number}: bad record ({first['loc']}: {first['msg']})") from None
            self._records[record.id] = record

    def __len__(self) -> int:
        return len(self._records)

    @property
    def records(self) -> list[CandidateRecord]:
        """All records in the order they were added."""
        return list(self._records.values())

    def add(self, record: CandidateRecord) -> CandidateRecord:
        """Append a record (ids are unique) and persist it at once."""
        if record.id in self._records:
            raise ArchiveError(f"candidate {record.id} is already in the archive")
        self._records[record.id] = record
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a") as handle:
                handle.write(json.dumps(record.model_dump(), sort_keys=True) + "\n")
        return record

    def get(self, candidate_id: str) -> CandidateRecord:
        """The record with this id; a clear error when there is none."""
        try:
            return self._records[candidate_id]
        except KeyError:
            raise ArchiveError(f"no candidate {candidate_id!r} in the archive") from None

    def __contains__(self, candidate_id: object) -> bool:
        return candidate_id in self._records

    def next_id(self) -> str:
        """The next free id: "c" and four digits, one past the highest number used."""
        numbers = [int(key[1:]) for key in self._records if key[:1] == "c" and key[1:].isdigit()]
        return f"c{max(numbers, default=-1) + 1:04d}"

    def correct(self) -> list[CandidateRecord]:
        """Records with a measured, correct result, in the order added."""
        return [record for record in self._records.values() if record.is_correct]

    def eligible(self) -> list[CandidateRecord]:
        """Correct records whose measurement is trusted (none set aside), in the order added."""
        return [record for record in self._records.values() if record.is_eligible]

    def set_aside(self) -> list[CandidateRecord]:
        """Correct records set aside by a hard flag, in the order added."""
        return [record for record in self._records.values() if record.is_correct and not record.is_eligible]

    def best(self) -> CandidateRecord | None:
        """The eligible record with the highest speedup (the earliest among equals), or None."""
        eligible = self.eligible()
        return max(eligible, key=lambda record: record.speedup) if eligible else None

    def recent_failures(self, n: int = 5) -> list[CandidateRecord]:
        """The last `n` rejected candidates, most recent last."""
        failures = [record for record in self._records.values() if record.is_failure]
        return failures[-n:] if n > 0 else []

    def lineage(self, candidate_id: str) -> list[CandidateRecord]:
        """The chain of parents from the root down to `candidate_id` (root first)."""
        chain: list[CandidateRecord] = []
        seen: set[str] = set()
        current: str | None = candidate_id
        while current is not None:
            if current in seen:
                raise ArchiveError(f"lineage of {candidate_id} has a cycle at {current}")
            seen.add(current)
            record = self.get(current)
            chain.append(record)
            current = record.parent_id
        return chain[::-1]
