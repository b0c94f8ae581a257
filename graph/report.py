"""The run's deliverables under its directory: best_kernel.py, summary.json, speedup.svg and report.md.

The report links the run's transcript (every model call, `agents.transcript`), names the target architecture
and the output-token limit per role, and shows per iteration what the designer took from the reference.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from langgraph.runtime import Runtime

from agents.accounting import totals_by_role
from agents.cassette import read_cassette, recorded_from
from agents.choice import RULE_TEXT, TIE_RULE
from agents.errors import FatalLLMError
from agents.models import ROLE_MAX_OUTPUT_TOKENS, ROLES, describe_models, models_by_role
from agents.population import diversity
from agents.transcript import TRANSCRIPT_FILE
from graph import lab, quarantine
from graph.context import RunContext
from graph.plot import speedup_svg
from graph.state import ScientistState
from kernels.archive import Archive, CandidateRecord
from kernels.labbook import DesignRecord, LabBook
from kernels.speedup import format_speedup

STRATEGIES = {
    "scientist": "the selector picks a base and a contrasting reference; the designer writes avenues, then plans, "
    "and keeps some by the paper's rule",
    "sampling": "best-of-N: every sample starts from the starting kernel, with the same implementer and budget",
    "tree": "adaptive epsilon-greedy search over the lineage tree picks the base; the designer as in the scientist",
}


def report(state: ScientistState, runtime: Runtime[RunContext]) -> dict:
    """Write the report files and say where they are."""
    path = write_report(Path(state["run_dir"]), state, runtime.context)
    return {"report_path": str(path)}


def write_report(run_dir: Path, state: ScientistState, ctx: RunContext) -> Path:
    """Write every report file from the archive and the final state; returns the report's path."""
    archive = lab.open_archive(run_dir)
    book = LabBook(run_dir)
    summary = build_summary(archive, book, state, ctx, run_dir.name)
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    best = lab.best_kernel(archive)
    if best is not None:
        (run_dir / "best_kernel.py").write_text(best.source)
    points = [
        (r.iteration, r.speedup, "set aside" if _standing(r) == "set aside" else r.status, r.id)
        for r in archive.records
    ]
    title = f"{summary['problem']} on {summary['device']} ({summary['timing'] or 'untimed'})"
    (run_dir / "speedup.svg").write_text(speedup_svg(points, title=title))
    path = run_dir / "report.md"
    path.write_text(render_markdown(archive, summary, book))
    return path


def build_summary(archive: Archive, book: LabBook, state: ScientistState, ctx: RunContext, run_id: str) -> dict:
    """The machine-readable outcome of a run."""
    best = lab.best_kernel(archive)
    candidates = [r for r in archive.records if r.experiment is not None]
    calls = state.get("llm_calls", [])
    tokens, dollars = lab.spent(calls)
    seed = next((r for r in archive.records if r.eval), None)
    target = lab.run_target(ctx, state.get("device") or lab.run_device(ctx), archive)
    transcript = book.run_dir / TRANSCRIPT_FILE
    return {
        "run_id": run_id,
        "strategy": ctx.strategy,
        "problem": state.get("problem", ctx.problem),
        "device": state.get("device", ctx.device),
        "evaluations": lab.executor(ctx, state.get("device") or lab.run_device(ctx)).describe(),
        "target": {"name": target.name, "title": target.title, "arch": target.arch},
        "model": ctx.model,
        "role_models": dict(ctx.role_models),
        "output_token_limits": dict(ROLE_MAX_OUTPUT_TOKENS),
        "transcript": TRANSCRIPT_FILE if transcript.exists() else None,
        "model_calls": sum(1 for _ in transcript.open()) if transcript.exists() else 0,
        "timing": seed.eval.get("timing") if seed else None,
        "baseline_ms": seed.eval.get("baseline_ms") if seed else None,
        "best_id": best.id if best else None,
        "best_speedup": best.speedup if best else None,
        "best_speedup_band": best.measured.get("speedup_band") if best else None,
        "best_speedup_vs_compile": best.measured.get("speedup_vs_compile") if best else None,
        "best_runtime_ms": best.runtime_ms if best else None,
        "set_aside": [{"id": r.id, "speedup": r.speedup, "reason": r.set_aside} for r in archive.set_aside()],
        "cleared_by_strict": [r.id for r in archive.records if r.cleared_by_strict],
        "best_roofline_fraction": lab.roofline_fraction(best),
        "iterations": state.get("iteration", 0),
        "candidates": len(candidates),
        "statuses": dict(Counter(r.status for r in candidates)),
        "tokens": tokens,
        "cost_usd": round(dollars, 6),
        "per_role": totals_by_role(calls),
        "elapsed_s": round(state.get("elapsed_s", 0.0), 1),
        "stop_reason": state.get("stop_reason"),
        "notes": list(state.get("notes", [])),
        "diversity": diversity(archive),
        "designs": len(book.designs),
        "findings": book.findings,
    }


def render_markdown(archive: Archive, summary: dict, book: LabBook) -> str:
    """The human report: headline, method, plot, lineage tree, who was set aside, designs, findings and the notebook."""
    best = summary["best_speedup"]
    target = summary["target"]
    limits = ", ".join(f"{role} {n}" for role, n in summary["output_token_limits"].items())
    by_spec = models_by_role(summary["model"], summary["role_models"])
    replayed = any(spec.startswith("replay:") for spec in by_spec)
    best_text = f"{summary['best_id']} at {format_speedup(best)} over the PyTorch reference" if best else "none"
    if summary.get("best_speedup_band"):
        low, high = summary["best_speedup_band"]
        best_text += f" (95 % noise band {format_speedup(low)}-{format_speedup(high)}: changes inside it are no gain)"
    headline = f"- best: {best_text}"
    if summary.get("best_speedup_vs_compile"):
        headline += f", {format_speedup(summary['best_speedup_vs_compile'])} over torch.compile"
    if summary["set_aside"]:
        headline += f" ({len(summary['set_aside'])} set aside by anti-cheat flags, not counted: see below)"
    lines = [
        f"# Kernel Scientist run {summary['run_id']}",
        "",
        f"- problem: `{summary['problem']}` on `{summary['device']}` (timing: {summary['timing']})",
        f"- target: {target['title']} (`{target['name']}`; {target['arch']})",
        f"- model: {describe_models(summary['model'], summary['role_models'], quote='`')}",
        f"- output-token limit per role: {limits}" + (" (live models only)" if replayed else ""),
        f"- evaluations: {summary['evaluations']}",
        f"- strategy: {summary['strategy']} ({STRATEGIES[summary['strategy']]})",
        headline,
        f"- iterations: {summary['iterations']}, candidates: {summary['candidates']}, statuses: {summary['statuses']}",
        f"- tokens: {summary['tokens']}, cost: ${summary['cost_usd']:.4f}, wall time: {summary['elapsed_s']} s",
        f"- stopped: {summary['stop_reason']}",
    ]
    # Every cassette that answered, so no replayed role reads as answered by a live model.
    lines += [note for spec, roles in by_spec.items() if (note := replay_note(spec, roles))]
    if summary["transcript"]:
        lines.append(
            f"- transcript: [{summary['transcript']}]({summary['transcript']}), every model call's prompt and "
            f"answer ({summary['model_calls']} lines)"
        )
    if summary["timing"] == "interpreter":
        lines.append("- note: CPU timings come from Triton's interpreter; they rank candidates, not GPU performance")
    spread = summary["diversity"]
    lines.append(
        f"- diversity: {spread['lines_alive']} lines of descent among the top {spread['top_candidates']} "
        f"candidates, mean source distance {spread['source_distance']} (0 identical, 1 disjoint)"
    )
    lines += ["", "![speedup over iterations](speedup.svg)", "", "## Lineage", "", "```"]
    lines += lineage_tree(archive)
    lines += ["```", ""]
    lines += set_aside_section(summary)
    if book.designs:
        lines += ["## Designs", "", f"Plans are kept by the paper's rule: {RULE_TEXT}; {TIE_RULE}."]
        for design in book.designs:
            lines += design_section(design)
        lines += [""]
    if book.findings:
        lines += ["## Findings", ""] + [f"- {text}" for text in book.findings.values()] + [""]
    lines += ["## Notebook of experiments", ""]
    lines += notebook_table(archive.records)
    if summary["notes"]:
        lines += ["", "## Notes", ""] + [f"- {note}" for note in summary["notes"]]
    return "\n".join(lines) + "\n"


def replay_note(model: str, roles: list[str] | None = None) -> str | None:
    """For a replayed model, where its LLM answers (for `roles`, else all) came from; None for a live one."""
    if not model.startswith("replay:"):
        return None
    path = Path(model.removeprefix("replay:"))
    whose = "LLM answers" if not roles or set(roles) == set(ROLES) else f"the {', '.join(roles)} LLM answers"
    try:
        header = read_cassette(path)
    except FatalLLMError:
        return f"- note: {whose} replayed from a cassette that is no longer readable ({path.name})"
    origin = recorded_from(header)
    if origin == "authored by hand":
        origin += " (its token counts and cost are estimates)"
    else:
        origin = f"recorded from {origin} at {header.get('recorded_at')}"
    return f"- note: {whose} replayed from {path.name}, a cassette {origin}; the kernels were evaluated by this run"


def _cell(value) -> str:
    return str(value).replace("|", "/").replace("\n", " ")


def design_section(design: DesignRecord) -> list[str]:
    """One iteration's design: the selection, the profile read, every avenue and every plan, chosen or not."""
    reference = f", reference {design.reference_id} ({design.contrast} contrast)" if design.reference_id else ""
    lines = ["", f"### Iteration {design.iteration}: base {design.base_id}{reference}", "", design.rationale]
    lines += ["", f"Designed for: `{design.target}`."] if design.target else []
    lines += from_reference(design)
    if design.profile:
        lines += ["", "Profiler evidence on the base:", "", "```", design.profile, "```"]
    if design.avenues:
        lines += ["", "Avenues:", ""]
        lines += [
            f"{n}. **{_cell(a['title'])}**: {_cell(a['direction'])} (sources: {', '.join(a['citations']) or 'none'})"
            for n, a in enumerate(design.avenues, 1)
        ]
    if design.plans:
        reasons = {pick["index"]: pick["reason"] for pick in design.chosen}
        lines += ["", "| # | plan | avenue | uplift | risk | innovation | anchors | chosen |", "|" + " --- |" * 8]
        for n, plan in enumerate(design.plans):
            anchors = ", ".join(f"{a['start_line']}-{a['end_line']}" for a in plan["anchors"]) or "-"
            uplift = f"{plan['expected_speedup_min']:g}-{plan['expected_speedup_max']:g}x"
            cells = [n + 1, plan["title"], plan["avenue"], uplift, plan["risk"], plan["innovation"], anchors]
            cells.append(reasons.get(n, "no"))
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return lines


def from_reference(design: DesignRecord) -> list[str]:
    """What the designer learned from the reference and what the chosen plans took from it."""
    if design.strategy == "sampling":
        return []
    if not design.reference_id:
        return ["", "No reference this iteration: nothing to take from one."]
    lines = ["", f"What the difference with {design.reference_id} taught: {design.lesson or '(not said)'}"]
    taken = [
        f"- {design.plans[pick['index']]['title']}: {design.plans[pick['index']].get('from_reference')}"
        for pick in design.chosen
        if pick["index"] < len(design.plans) and design.plans[pick["index"]].get("from_reference")
    ]
    if not taken:
        return lines + ["", f"Taken from {design.reference_id}: nothing (no chosen plan borrows from it)."]
    return lines + ["", f"Taken from {design.reference_id} by the chosen plans:", "", *taken]


def lineage_tree(archive: Archive) -> list[str]:
    """Every candidate under its parent, as an indented tree."""
    children: dict[str | None, list[CandidateRecord]] = {}
    for record in archive.records:
        children.setdefault(record.parent_id, []).append(record)

    def walk(parent: str | None, depth: int) -> list[str]:
        rows = []
        for record in children.get(parent, []):
            speed = format_speedup(record.speedup)
            title = (record.experiment or {}).get("title", record.note)
            standing = f", {_standing(record)}" if _standing(record) else ""
            rows.append(f"{'  ' * depth}{record.id} [{record.status}, {speed}{standing}] {title}")
            rows += walk(record.id, depth + 1)
        return rows

    return walk(None, 0)


def notebook_table(records: list[CandidateRecord]) -> list[str]:
    """One row per experiment: its hypothesis, parent, outcome and measured change."""
    rows = [
        "| id | iter | slot | parent | experiment | expected | status | speedup | 95 % band | debug | note |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in records:
        if r.experiment is None:
            continue
        e = r.experiment
        expected = f"{e.get('expected_speedup_min', '?')}-{e.get('expected_speedup_max', '?')}x"
        speed = format_speedup(r.speedup)
        status = f"{r.status}, {_standing(r)}" if _standing(r) else r.status
        cells = [r.id, r.iteration, r.slot, r.parent_id, e.get("title", ""), expected, status, speed, _band(r)]
        cells += [r.debug_attempts, r.note or r.eval.get("message", "")]
        rows.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return rows


def set_aside_section(summary: dict) -> list[str]:
    """Who a hard anti-cheat flag set aside and why, and who a strict re-evaluation cleared; nothing if neither."""
    if not summary["set_aside"] and not summary["cleared_by_strict"]:
        return []
    lines = ["## Set aside", ""]
    lines += ["Kept out of best, base and headline until a strict re-evaluation clears them:", ""]
    for entry in summary["set_aside"]:
        speed = format_speedup(entry["speedup"])
        lines.append(f"- {entry['id']} ({speed} as measured): {entry['reason']}")
    if not summary["set_aside"]:
        lines.append("- none")
    if summary["cleared_by_strict"]:
        lines += ["", f"Cleared by a strict re-evaluation: {', '.join(summary['cleared_by_strict'])}"]
    return lines + [""]


def _band(record: CandidateRecord) -> str:
    """The noise band the evaluator measured around the record's speedup, or "-"."""
    band = record.measured.get("speedup_band")
    return f"{format_speedup(band[0])}-{format_speedup(band[1])}" if band else "-"


def _standing(record: CandidateRecord) -> str:
    """The quarantine's mark on a record: "set aside", "cleared" (by a strict re-evaluation), its control or nothing."""
    if record.set_aside and record.is_correct:
        return "set aside"
    spread = quarantine.spread(record)
    controlled = f"band widened {format_speedup(spread)} by its control" if spread else ""
    return ", ".join(filter(None, ["cleared" if record.cleared_by_strict else "", controlled]))
