"""The population as the selector weighs it: lines of descent, per-shape strengths, leaders and diversity.

- `line_of(archive)`: {candidate id: its line of descent}, named by the first experiment under the starting
  point (the reference or the seed); the starting points are lines of their own.
- `shape_speedups(record)`: {benchmark shape name: speedup} from the evaluation's per-shape results.
- `trusted(archive)`: correct candidates that no hard anti-cheat flag set aside.
- `shape_leaders`, `line_leaders`: the fastest trusted candidate per shape and per line.
- `beats(record, other)`: whether a record's speedup is a gain over another's beyond its own noise band; a change
  inside the band is no gain: not a new best, not a new leader, not a headline, and neither is one without a band.
- `diversity(archive)`: {"lines_alive", "source_distance"}: distinct lines among the top candidates, and
  their mean pairwise source distance (1 - difflib's line similarity ratio), for the report.
"""

from __future__ import annotations

import difflib
from itertools import combinations

from kernels.archive import Archive, CandidateRecord

STARTING = ("reference", "seed")
TOP_FOR_DIVERSITY = 6


def is_set_aside(record: CandidateRecord) -> bool:
    """True when a hard anti-cheat flag set the candidate's measurement aside and no strict run cleared it."""
    return record.set_aside is not None


def beats(record: CandidateRecord, other: CandidateRecord | None) -> bool:
    """Whether `record` is faster than `other` beyond the noise: the low end of its speedup's band above other's.

    A record without a band (an archive written before bands, a timing too short to draw one) gains nothing.
    """
    if other is None:
        return True
    return gain_over(record.speedup, record.measured.get("speedup_band"), other.speedup)


def gain_over(speedup: float | None, band, other: float | None) -> bool:
    """Whether `speedup`, with its noise band, is a gain over `other`: the band's low end above it (no band: none)."""
    if speedup is None:
        return False
    if other is None:
        return True
    # No band is no evidence: read by its figure alone, a run too short to draw one gained by any margin.
    return bool(band) and band[0] > other


def within_noise(record: CandidateRecord, other: float) -> bool:
    """Whether `other`'s figure lies inside `record`'s noise band (no band: never)."""
    band = record.measured.get("speedup_band")
    return bool(band) and band[0] <= other <= band[1]


def trusted(archive: Archive) -> list[CandidateRecord]:
    """Correct candidates whose measurement stands (no hard flag), in the order added."""
    return [record for record in archive.correct() if not is_set_aside(record)]


def line_of(archive: Archive) -> dict[str, str]:
    """Each candidate's line of descent: the id of its first ancestor below a starting point (or its own)."""
    lines: dict[str, str] = {}
    for record in archive.records:
        parent = archive.get(record.parent_id) if record.parent_id in archive else None
        if record.status in STARTING or parent is None:
            lines[record.id] = record.id
        elif parent.status in STARTING or parent.parent_id is None:
            lines[record.id] = record.id
        else:
            lines[record.id] = lines.get(parent.id, parent.id)
    return lines


def shape_speedups(record: CandidateRecord) -> dict[str, float]:
    """Speedup per benchmark shape, where the evaluation timed several."""
    return {name: speedup for name, (speedup, _) in _shapes(record).items()}


def _shapes(record: CandidateRecord) -> dict[str, tuple[float, list | None]]:
    """(speedup, its noise band) per timed benchmark shape."""
    return {
        shape["name"]: (shape["speedup"], shape.get("speedup_band"))
        for shape in record.measured.get("shapes") or []
        if shape.get("kind", "benchmark") == "benchmark" and shape.get("speedup") is not None
    }


def shape_leaders(archive: Archive) -> dict[str, CandidateRecord]:
    """The fastest trusted candidate on each benchmark shape: a later one leads only by a gain beyond its noise."""
    leaders: dict[str, tuple[float, CandidateRecord]] = {}
    for record in trusted(archive):
        for name, (speedup, band) in _shapes(record).items():
            if name not in leaders or gain_over(speedup, band, leaders[name][0]):
                leaders[name] = (speedup, record)
    return {name: record for name, (_, record) in leaders.items()}


def line_leaders(archive: Archive) -> dict[str, CandidateRecord]:
    """The fastest trusted candidate of each line of descent: a later one leads only by a gain beyond its noise."""
    lines = line_of(archive)
    leaders: dict[str, CandidateRecord] = {}
    for record in trusted(archive):
        held = leaders.get(lines[record.id])
        if beats(record, held):
            leaders[lines[record.id]] = record
    return leaders


def ranked(archive: Archive) -> list[CandidateRecord]:
    """Trusted candidates, fastest first (the earliest among equals)."""
    return sorted(trusted(archive), key=lambda record: -record.speedup)


def diversity(archive: Archive, top: int = TOP_FOR_DIVERSITY) -> dict:
    """Distinct lines of descent among the top candidates and their mean pairwise source distance."""
    best = [record for record in ranked(archive) if record.status not in STARTING][:top]
    lines = line_of(archive)
    pairs = list(combinations(best, 2))
    similarity = [difflib.SequenceMatcher(None, a.source.splitlines(), b.source.splitlines()).ratio() for a, b in pairs]
    distance = 1 - sum(similarity) / len(similarity) if similarity else None
    return {
        "lines_alive": len({lines[record.id] for record in best}),
        "top_candidates": len(best),
        "source_distance": round(distance, 3) if distance is not None else None,
    }
