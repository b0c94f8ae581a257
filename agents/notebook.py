"""The lab notebook as prompts see it: bounded summaries of the archive, so prompt size stays flat as it grows.

- `archive_summary(archive, max_lines=40)`: for the selector; best per configuration, the top candidates it
  may pick from, candidates set aside (not to chase), recent failures, the lineage of the best, and counts.
- `notebook_summary(archive, max_entries=12)`: for the hypothesizer; the last experiments with their
  hypothesis, parent, outcome and measured change, plus a one-line tally of everything earlier.
- `selectable_ids(archive, k=8)`: the ids the selector may choose from, best first; never one set aside.

Every field is clipped to a fixed width and every list to a fixed length, so the text is bounded whatever
the archive holds.
"""

from __future__ import annotations

from collections import Counter

from kernels.archive import Archive, CandidateRecord

FIELD_CHARS = 160
LINEAGE_SHOWN = 8
SET_ASIDE_SHOWN = 3


def _clip(text: str | None, limit: int = FIELD_CHARS) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _speed(record: CandidateRecord) -> str:
    return f"{record.speedup:.2f}x" if record.speedup is not None else "-"


def _title(record: CandidateRecord) -> str:
    if record.experiment:
        return _clip(record.experiment.get("title"), 60)
    return record.status


def _configuration(record: CandidateRecord) -> str:
    # Candidates are timed per device configuration; the evaluator writes the device it ran on.
    return str(record.eval.get("config") or record.eval.get("device") or "default")


def selectable_ids(archive: Archive, k: int = 8) -> list[str]:
    """Ids of the `k` fastest eligible candidates (correct, not set aside), best first: what the selector may pick."""
    ranked = sorted(archive.eligible(), key=lambda record: -record.speedup)
    return [record.id for record in ranked[:k]]


def archive_summary(archive: Archive, max_lines: int = 40, *, top_k: int = 8, failures: int = 5) -> str:
    """A compact view of the population for the selector; at most `max_lines` lines."""
    if not len(archive):
        return "The archive is empty."
    lines = ["Best per configuration:"]
    best_by_config: dict[str, CandidateRecord] = {}
    for record in archive.eligible():
        held = best_by_config.get(_configuration(record))
        if held is None or record.speedup > held.speedup:
            best_by_config[_configuration(record)] = record
    for config, record in sorted(best_by_config.items())[:4]:
        lines.append(f"  {config}: {record.id} {_speed(record)} ({record.runtime_ms or 0:.3f} ms) {_title(record)}")

    lines.append("Candidates you may choose (best first):")
    for candidate_id in selectable_ids(archive, top_k):
        record = archive.get(candidate_id)
        lines.append(
            f"  {record.id} {_speed(record)} parent {record.parent_id or '-'} iter {record.iteration}: {_title(record)}"
        )

    set_aside = archive.set_aside()
    if set_aside:
        lines.append(f"Set aside, not to build on ({len(set_aside)}; their speed is not trusted):")
        lines += [f"  {r.id} {_speed(r)} claimed: {_clip(r.set_aside, 100)}" for r in set_aside[-SET_ASIDE_SHOWN:]]

    recent = archive.recent_failures(failures)
    if recent:
        lines.append("Recent failures:")
        lines += [
            f"  {r.id} (parent {r.parent_id or '-'}) {r.status}: {_title(r)}; {_clip(r.eval.get('message'), 100)}"
            for r in recent
        ]

    best = archive.best()
    if best is not None:
        chain = archive.lineage(best.id)
        shown = [f"{r.id} {_speed(r)}" for r in chain[-LINEAGE_SHOWN:]]
        elided = f"({len(chain) - LINEAGE_SHOWN} earlier) -> " if len(chain) > LINEAGE_SHOWN else ""
        lines.append(f"Lineage of the best: {elided}{' -> '.join(shown)}")

    statuses = Counter(record.status for record in archive.records)
    lines.append(f"Totals: {len(archive)} candidates; " + ", ".join(f"{s} {n}" for s, n in sorted(statuses.items())))
    return "\n".join(lines[:max_lines])


def _change(record: CandidateRecord, parent: CandidateRecord | None) -> str:
    if record.speedup is None or record.status != "correct":
        return _clip(record.eval.get("message"), 100) or "no measurement"
    if record.set_aside:
        return f"{_speed(record)} claimed, SET ASIDE (not trusted, do not build on it): {_clip(record.set_aside, 100)}"
    cleared = ", cleared by a strict re-evaluation" if record.cleared_by_strict else ""
    if parent is None or parent.speedup is None:
        return f"{_speed(record)} (no parent measurement{cleared})"
    change = (record.speedup / parent.speedup - 1) * 100
    return f"{_speed(parent)} -> {_speed(record)} ({change:+.0f}%{cleared})"


def notebook_summary(archive: Archive, max_entries: int = 12) -> str:
    """The last `max_entries` experiments (hypothesis, parent, outcome, measured change) and a tally of the rest."""
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
        experiment = record.experiment
        parent = archive.get(record.parent_id) if record.parent_id in archive else None
        expected = f"{experiment.get('expected_speedup_min', '?')}-{experiment.get('expected_speedup_max', '?')}x"
        lines.append(
            f"- {record.id} (iter {record.iteration}, parent {record.parent_id or '-'}): {_title(record)}\n"
            f"  hypothesis: {_clip(experiment.get('mechanism'))}\n"
            f"  expected {expected}, risk {experiment.get('risk', '?')}; outcome {record.status}"
            f"{f' after {record.debug_attempts} debug rounds' if record.debug_attempts else ''}: "
            f"{_change(record, parent)}"
            f"{f'; {_clip(record.note, 80)}' if record.note else ''}"
        )
    return "\n".join(lines)


def _gained(archive: Archive, record: CandidateRecord) -> bool:
    parent = archive.get(record.parent_id) if record.parent_id in archive else None
    return bool(parent and parent.speedup and record.speedup and record.speedup > parent.speedup)
