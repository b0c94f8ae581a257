"""The lab notebook as prompts see it: bounded summaries of the archive, so prompt size stays flat as it grows.

- `archive_summary(archive, max_lines=40)`: for the selector; best per configuration, the candidates it may
  pick from with their per-shape speedups and lines of descent, the leaders per shape and per line, candidates
  set aside (not to chase), recent failures, the lineage of the best, a diversity figure and counts.
- `notebook_summary(archive, findings=None, max_entries=12)`: for the designer; the last experiments' findings
  (stored ones, else written now by `agents.findings`), plus a one-line tally of everything earlier.
- `lineage_line(archive, candidate_id)`: its ancestors and itself, with speedups and titles, on one line.
- `selectable_ids(archive, k=8)`: the ids the selector may choose from: the `k` fastest trusted candidates, then
  each shape's and each line's leader outside them, so a candidate strong on one shape or heading another line
  is on offer. Candidates set aside (a hard anti-cheat flag no strict re-evaluation cleared) are never offered.

Every field is clipped to a fixed width and every list to a fixed length, so the text is bounded whatever
the archive holds.
"""

from __future__ import annotations

from collections import Counter

from agents.findings import finding_for
from agents.population import beats, diversity, line_leaders, line_of, ranked, shape_leaders, shape_speedups
from agents.text import clip
from kernels.archive import Archive, CandidateRecord
from kernels.speedup import format_speedup

FIELD_CHARS = 160
LINEAGE_SHOWN = 8
SET_ASIDE_SHOWN = 3
SHAPES_SHOWN = 3
LEADERS_SHOWN = 6
EXTRA_LEADERS = 6


def _speed(record: CandidateRecord) -> str:
    """Its speedup, with the noise band the evaluator measured around it where there is one."""
    band = record.measured.get("speedup_band")
    speed = format_speedup(record.speedup)
    return f"{speed} (noise band {format_speedup(band[0])}-{format_speedup(band[1])})" if band else speed


def _title(record: CandidateRecord) -> str:
    if record.experiment:
        return clip(record.experiment.get("title"), 60)
    return record.status


def _configuration(record: CandidateRecord) -> str:
    # Candidates are timed per device configuration; the evaluator writes the device it ran on.
    return str(record.eval.get("config") or record.eval.get("device") or "default")


def selectable_ids(archive: Archive, k: int = 8) -> list[str]:
    """The top `k` trusted candidates (none set aside), then the shape and line leaders outside them."""
    ids = [record.id for record in ranked(archive)[:k]]
    leaders = [*shape_leaders(archive).values(), *line_leaders(archive).values()]
    extra = [record.id for record in leaders if record.id not in ids]
    return ids + list(dict.fromkeys(extra))[:EXTRA_LEADERS]


def _shapes(record: CandidateRecord) -> str:
    speeds = list(shape_speedups(record).items())
    if len(speeds) < 2:
        return ""
    shown = ", ".join(f"{clip(name, 24)} {format_speedup(speed)}" for name, speed in speeds[:SHAPES_SHOWN])
    return f" | shapes: {shown}{' ...' if len(speeds) > SHAPES_SHOWN else ''}"


def archive_summary(archive: Archive, max_lines: int = 40, *, top_k: int = 8, failures: int = 5) -> str:
    """A compact view of the population for the selector; at most `max_lines` lines."""
    if not len(archive):
        return "The archive is empty."
    lines = ["Best per configuration:"]
    best_by_config: dict[str, CandidateRecord] = {}
    for record in archive.eligible():
        held = best_by_config.get(_configuration(record))
        if beats(record, held):
            best_by_config[_configuration(record)] = record
    for config, record in sorted(best_by_config.items())[:4]:
        lines.append(f"  {config}: {record.id} {_speed(record)} ({record.runtime_ms or 0:.3f} ms) {_title(record)}")

    lines.append("Candidates you may choose (fastest first, then leaders of a shape or a line of descent):")
    lines_of = line_of(archive)
    for candidate_id in selectable_ids(archive, top_k):
        record = archive.get(candidate_id)
        lines.append(
            f"  {record.id} {_speed(record)} line {lines_of[record.id]} parent {record.parent_id or '-'} "
            f"iter {record.iteration}: {_title(record)}{_shapes(record)}"
        )
    by_shape = list(shape_leaders(archive).items())
    if len(by_shape) > 1:
        shown = "; ".join(
            f"{clip(name, 24)}: {r.id} {format_speedup(shape_speedups(r)[name])}"
            for name, r in by_shape[:LEADERS_SHOWN]
        )
        lines.append(f"Leaders per shape: {shown}")
    by_line = sorted(line_leaders(archive).items(), key=lambda item: -item[1].speedup)
    members = Counter(lines_of.values())
    shown = "; ".join(f"{line}: {r.id} {_speed(r)} ({members[line]} tried)" for line, r in by_line[:LEADERS_SHOWN])
    more = f"; {len(by_line) - LEADERS_SHOWN} more lines" if len(by_line) > LEADERS_SHOWN else ""
    lines.append(f"Leaders per line of descent: {shown}{more}")

    set_aside = archive.set_aside()
    if set_aside:
        lines.append(f"Set aside, not to build on ({len(set_aside)}; their speed is not trusted):")
        lines += [f"  {r.id} {_speed(r)} claimed: {clip(r.set_aside, 100)}" for r in set_aside[-SET_ASIDE_SHOWN:]]

    recent = archive.recent_failures(failures)
    if recent:
        lines.append("Recent failures:")
        lines += [
            f"  {r.id} (parent {r.parent_id or '-'}) {r.status}: {_title(r)}; {clip(r.eval.get('message'), 100)}"
            for r in recent
        ]

    best = next(iter(ranked(archive)), None)
    if best is not None:
        chain = archive.lineage(best.id)
        shown = [f"{r.id} {_speed(r)}" for r in chain[-LINEAGE_SHOWN:]]
        elided = f"({len(chain) - LINEAGE_SHOWN} earlier) -> " if len(chain) > LINEAGE_SHOWN else ""
        lines.append(f"Lineage of the best: {elided}{' -> '.join(shown)}")

    spread = diversity(archive)
    distance = f"{spread['source_distance']:.2f}" if spread["source_distance"] is not None else "-"
    lines.append(
        f"Diversity: {spread['lines_alive']} lines of descent among the top {spread['top_candidates']}; "
        f"mean source distance {distance} (0 same, 1 disjoint)"
    )
    statuses = Counter(record.status for record in archive.records)
    lines.append(f"Totals: {len(archive)} candidates; " + ", ".join(f"{s} {n}" for s, n in sorted(statuses.items())))
    return "\n".join(lines[:max_lines])


def notebook_summary(archive: Archive, findings: dict[str, str] | None = None, max_entries: int = 12) -> str:
    """The last `max_entries` experiments' findings, and a tally of the earlier ones."""
    findings = findings or {}
    experiments = [record for record in archive.records if record.experiment]
    if not experiments:
        return "No experiments yet."
    shown, earlier = experiments[-max_entries:], experiments[:-max_entries]
    lines = []
    if earlier:
        outcomes = Counter(record.status for record in earlier)
        improved = sum(1 for r in earlier if r.is_eligible and _gained(archive, r))
        tally = ", ".join(f"{s} {n}" for s, n in sorted(outcomes.items()))
        lines.append(f"{len(earlier)} earlier experiments: {tally}; {improved} beat their parent.")
    for record in shown:
        finding = findings.get(record.id) or finding_for(record, _parent(archive, record))
        lines.append(f"- iter {record.iteration}, parent {record.parent_id or '-'}: {clip(finding, 2 * FIELD_CHARS)}")
    return "\n".join(lines)


def lineage_line(archive: Archive, candidate_id: str) -> str:
    """The candidate's line from its starting point: each ancestor's id, speedup and experiment, oldest first."""
    chain = archive.lineage(candidate_id)
    shown = [f"{r.id} {_speed(r)} ({clip(_title(r), 48)})" for r in chain[-LINEAGE_SHOWN:]]
    elided = f"({len(chain) - LINEAGE_SHOWN} earlier) -> " if len(chain) > LINEAGE_SHOWN else ""
    return elided + " -> ".join(shown)


def _parent(archive: Archive, record: CandidateRecord) -> CandidateRecord | None:
    return archive.get(record.parent_id) if record.parent_id in archive else None


def _gained(archive: Archive, record: CandidateRecord) -> bool:
    parent = _parent(archive, record)
    return bool(parent and parent.speedup and record.speedup and beats(record, parent))
