"""Dynamic context (STARK): what was tried from the same parent, for the implementer and the debugger.

`sibling_digest(archive, base_id, findings, concurrent=...)`: the latest earlier children of `base_id` (their
plan, a bounded diff against the base and the finding on their outcome) and the titles of the plans being
implemented from it now, in at most `budget_chars` characters: whole entries are dropped, newest kept.
"""

from __future__ import annotations

from collections.abc import Sequence

from agents.anchors import bounded_diff
from agents.findings import finding_for
from agents.text import clip
from kernels.archive import Archive

MAX_SIBLINGS = 3
DIFF_LINES = 24
BUDGET_CHARS = 4000
PLAN_CHARS = 240


def sibling_digest(
    archive: Archive,
    base_id: str,
    findings: dict[str, str],
    *,
    concurrent: Sequence[str] = (),
    budget_chars: int = BUDGET_CHARS,
) -> str:
    """Earlier attempts from the same base (plan, diff, outcome) and the plans running beside this one."""
    base = archive.get(base_id)
    children = [r for r in archive.records if r.parent_id == base_id and r.experiment is not None]
    entries = []
    for child in reversed(children[-MAX_SIBLINGS:]):
        plan = child.experiment
        steps = "; ".join(plan.get("rubric") or [plan.get("change", "")])
        outcome = findings.get(child.id) or finding_for(child, base)
        diff = bounded_diff(base.source, child.source, DIFF_LINES) if child.source else "(no source)"
        entries.append(
            f"- {child.id} (iteration {child.iteration}): {clip(plan.get('title', ''), 80)}\n"
            f"  plan: {clip(steps, PLAN_CHARS)}\n  outcome: {clip(outcome, 2 * PLAN_CHARS)}\n"
            f"  diff against the base:\n```diff\n{diff}\n```"
        )
    lines = []
    if concurrent:
        lines.append("Being implemented from the same base right now: " + "; ".join(clip(t, 80) for t in concurrent))
    used, shown = sum(len(line) for line in lines), 0
    for entry in entries:
        if used + len(entry) > budget_chars:
            break
        lines.append(entry)
        used, shown = used + len(entry), shown + 1
    if len(children) > shown:
        lines.append(f"({len(children) - shown} earlier attempts from this base not shown)")
    return "\n".join(lines) or "No earlier attempts from this base."
