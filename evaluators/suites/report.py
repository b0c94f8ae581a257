"""The suite report: fast_p, geometric-mean speedup and roofline over a suite's problems, as suite.md and suite.json.

fast_p is the share of ALL selected problems whose kernel is correct, not set aside by a hard flag, and more than
p times faster than PyTorch eager (p = 0: correct). A result set aside only by flags a strict re-evaluation may clear
counts once one has cleared it, and a significant change once one in other processes has confirmed it, by the two runs
together (the slower one's figures, bands spanning both: `evaluators.judge.strict`); uncleared, it is never fast.
Beside it, fast_p over significant speedups counts a problem only where the speedup's noise band
(judge/bands.py) also lies above p: a reward that pays for noise trains a policy to chase it. A problem that was not
judged (no candidate, not started, an error) is a row like any other and counts as a failure, never dropped. So does
one that does not fit in the device's memory (`does_not_fit`, the machine's limit rather than the candidate's): it is
counted apart from the failed candidates, and stays in fast_p's denominator, so no verdict raises fast_p by leaving a
problem out. When the torch.compile baseline was asked for, fast_1 and the geometric mean are also given over it; a
row without that timing is not fast over it.
"""

from __future__ import annotations

import json
import math
import platform
import statistics
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel

from evaluators.judge.result import EvalResult
from evaluators.judge.strict import standing
from evaluators.suites.plot import speedup_histogram_svg

FAST_P = (0.0, 1.0, 2.0)
NOT_JUDGED = "not_judged"
DOES_NOT_FIT = "does_not_fit"


class SuiteRow(BaseModel):
    """One problem's outcome in a suite: its verdict, measured speed, cost and why it may be set aside."""

    key: str
    status: str
    speedup: float | None = None
    speedup_band: tuple[float, float] | None = None
    speedup_vs_compile: float | None = None
    compile_note: str = ""  # why the torch.compile baseline was not timed, when it was asked for and failed
    roofline_fraction: float | None = None
    tokens: int | None = None
    dollars: float | None = None
    wall_s: float | None = None
    set_aside: str | None = None
    rechecked: bool = False  # a strict re-evaluation ran
    cleared_by_strict: bool = False  # and cleared the first: the row's figures are the slower run's
    process_spread: float | None = None  # the control's: how far two processes read apart, widening the band
    timing: str | None = None
    message: str = ""

    def fast(self, p: float) -> bool:
        """Correct, trusted, and (for p > 0) more than p times faster than eager."""
        if self.status != "correct" or self.set_aside:
            return False
        return p == 0 or (self.speedup is not None and self.speedup > p)

    def fast_significantly(self, p: float) -> bool:
        """fast(p), with the whole noise band above p (for p = 0: correct; no band: not significant)."""
        if not self.fast(p):
            return False
        return p == 0 or (self.speedup_band is not None and self.speedup_band[0] > p)


def row_from_result(
    key: str,
    result: EvalResult,
    wall_s: float | None = None,
    *,
    strict: EvalResult | None = None,
    control: EvalResult | None = None,
    **cost,
) -> SuiteRow:
    """A row from one evaluation and, where they ran, its strict re-evaluation and control; `cost`: tokens, dollars.

    Cleared by the strict run, the row carries the slower run's figures; otherwise the first's, and set aside with
    what the strict run found. The control widens the band (evaluators/judge/strict.py).
    """
    held = standing(result, strict, control)
    measured, correct = held.measured, result.status == "correct"
    fractions = [s.roofline_fraction for s in measured.shapes if s.kind == "benchmark" and s.roofline_fraction]
    if not fractions and measured.roofline and measured.roofline.fraction:
        fractions = [measured.roofline.fraction]
    if wall_s is None:
        wall_s = sum(run.stages.get("total", 0.0) for run in (result, strict, control) if run is not None)
    message = next(iter(result.message.splitlines()), "")
    if held.cleared:
        message = f"cleared by strict re-evaluation (set aside at first: {result.set_aside})"
    return SuiteRow(
        key=key,
        status=result.status,
        speedup=measured.speedup if correct else None,
        speedup_band=measured.speedup_band if correct else None,
        speedup_vs_compile=measured.speedup_vs_compile if correct else None,
        compile_note=measured.compile_baseline_error,
        roofline_fraction=statistics.median(fractions) if fractions else None,
        wall_s=round(wall_s, 2),
        set_aside=held.set_aside,
        rechecked=held.rechecked,
        cleared_by_strict=held.cleared,
        process_spread=held.spread,
        timing=measured.timing,
        message=message,
        **cost,
    )


def not_judged(key: str, reason: str, **fields) -> SuiteRow:
    """A row for a problem no verdict was reached on: it counts as a failure."""
    return SuiteRow(key=key, status=NOT_JUDGED, message=reason, **fields)


def summarize(rows: list[SuiteRow], compile_baseline: bool = False) -> dict:
    """fast_0/1/2, counts, the geometric-mean speedup over the trusted correct rows and the median roofline fraction.

    With `compile_baseline`, also fast_1 and the geometric-mean speedup over torch.compile.
    """
    total = len(rows)
    trusted = [r.speedup for r in rows if r.fast(0) and r.speedup]
    fractions = [r.roofline_fraction for r in rows if r.fast(0) and r.roofline_fraction is not None]
    summary = {f"fast_{p:g}": (sum(r.fast(p) for r in rows) / total if total else 0.0) for p in FAST_P}
    summary |= {
        f"fast_{p:g}_significant": (sum(r.fast_significantly(p) for r in rows) / total if total else 0.0)
        for p in FAST_P
        if p > 0
    }
    # Significant changes either way among the trusted correct rows: with the reference as its own candidate, none.
    summary["significant_changes"] = sum(
        r.fast(0) and r.speedup_band is not None and not r.speedup_band[0] <= 1.0 <= r.speedup_band[1] for r in rows
    )
    summary |= {
        "problems": total,
        "correct": sum(r.status == "correct" for r in rows),
        "set_aside": sum(r.status == "correct" and bool(r.set_aside) for r in rows),
        "rechecked": sum(r.rechecked for r in rows),
        "cleared_by_strict": sum(r.cleared_by_strict for r in rows),
        "controlled": sum(r.process_spread is not None for r in rows),
        "not_judged": sum(r.status == NOT_JUDGED for r in rows),
        "does_not_fit": sum(r.status == DOES_NOT_FIT for r in rows),
        "geomean_speedup": math.exp(statistics.fmean(map(math.log, trusted))) if trusted else None,
        "geomean_over": len(trusted),
        "median_roofline_fraction": statistics.median(fractions) if fractions else None,
        # None for a batch without LLM calls (evaluate-only), so "no cost" is not mistaken for a measured zero.
        "tokens": sum(r.tokens or 0 for r in rows) if any(r.tokens is not None for r in rows) else None,
        "dollars": round(sum(r.dollars or 0.0 for r in rows), 6) if any(r.dollars is not None for r in rows) else None,
        "wall_s": round(sum(r.wall_s or 0.0 for r in rows), 1),
        "interpreter_timings": any(r.timing == "interpreter" for r in rows),
        "compile_baseline": compile_baseline,
    }
    if compile_baseline:
        over = [r.speedup_vs_compile for r in rows if r.fast(0) and r.speedup_vs_compile]
        summary |= {
            "fast_1_over_compile": sum(s > 1.0 for s in over) / total if total else 0.0,
            "geomean_speedup_over_compile": math.exp(statistics.fmean(map(math.log, over))) if over else None,
            "geomean_over_compile": len(over),
        }
    return summary


def machine(executor: str = "") -> dict:
    """Where the suite ran: GPU name (or CPU), torch and Python versions, and the executor's own description."""
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {
        "gpu": gpu,
        "gpus": torch.cuda.device_count() if gpu else 0,
        "cpu": _cpu_name(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "executor": executor,
    }


def write_suite_report(
    out_dir: Path, rows: list[SuiteRow], *, suite: str, machine_info: dict, title: str, compile_baseline: bool = False
) -> Path:
    """Write suite.json, suite.md and speedup.svg under `out_dir`; returns suite.md's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = summarize(rows, compile_baseline)
    report = {
        "title": title,
        "suite": suite,
        "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine_info,
        "summary": summary,
        "rows": [row.model_dump() for row in rows],
    }
    (out_dir / "suite.json").write_text(json.dumps(report, indent=2) + "\n")
    trusted = [r.speedup for r in rows if r.fast(0) and r.speedup]
    set_aside = sum(r.status == "correct" and bool(r.set_aside) for r in rows)
    unfit = summary["does_not_fit"]
    failed = len(rows) - summary["correct"] - unfit
    (out_dir / "speedup.svg").write_text(speedup_histogram_svg(trusted, set_aside, failed, unfit, title=title))
    path = out_dir / "suite.md"
    path.write_text(render_markdown(report))
    return path


def render_markdown(report: dict) -> str:
    """The human report: headline numbers, the plot, and one row per problem."""
    s, m = report["summary"], report["machine"]
    total = s["problems"]
    fast = ", ".join(f"{key} {s[key]:.1%} ({round(s[key] * total)}/{total})" for key in ("fast_0", "fast_1", "fast_2"))
    significant = ", ".join(
        f"fast_{p} {s[f'fast_{p}_significant']:.1%}" for p in (1, 2) if f"fast_{p}_significant" in s
    )
    geomean = f"{s['geomean_speedup']:.3g}x over {s['geomean_over']}" if s["geomean_speedup"] else "none"
    roof = f"{s['median_roofline_fraction']:.1%}" if s["median_roofline_fraction"] is not None else "not measured"
    where = f"{m['gpus']} x {m['gpu']}" if m["gpu"] else f"CPU only ({m['cpu']})"
    cost = f"tokens: {s['tokens']}, cost: ${s['dollars']:.4f}, " if s["tokens"] is not None else "no LLM calls; "
    lines = [
        f"# {report['title']}",
        "",
        f"- suite: `{report['suite']}`, {total} problems selected; written {report['written_at']}",
        f"- machine: {where}; torch {m['torch']}, Python {m['python']}; evaluations: {m['executor']}",
        f"- {fast}",
        f"- over significant speedups (the noise band above p): {significant}; significant changes from eager, "
        f"either way: {s.get('significant_changes', 0)}",
        f"- correct: {s['correct']}/{total} ({s['set_aside']} set aside by a hard flag, not counted as fast); "
        f"not judged: {s['not_judged']} (counted as failures); too large for the device's memory: "
        f"{s['does_not_fit']} (the machine's limit, not a failed candidate; counted as not fast)",
        f"- rechecked by a strict re-evaluation: {s.get('rechecked', 0)}, cleared by it: "
        f"{s.get('cleared_by_strict', 0)} (counted by both runs: the slower one's figures, bands spanning both); "
        f"weighed against a control, the reference judged as itself: {s.get('controlled', 0)} (bands widened by "
        "how far its two processes read apart)",
        f"- geometric-mean speedup over PyTorch eager: {geomean} correct problems not set aside",
        f"- median fraction of the roofline: {roof}",
        f"- {cost}wall time: {s['wall_s']} s (sum over problems)",
    ]
    if s["compile_baseline"]:
        over = s["geomean_speedup_over_compile"]
        lines.append(
            f"- over torch.compile: fast_1 {s['fast_1_over_compile']:.1%}; geometric-mean speedup "
            + (f"{over:.3g}x over {s['geomean_over_compile']} problems" if over else "none measured")
        )
    if s["interpreter_timings"]:
        lines.append("- note: CPU timings come from Triton's interpreter; they are not GPU performance")
    lines += ["", "![speedup distribution](speedup.svg)", "", "## Problems", ""]
    compiled = s["compile_baseline"]
    header = ["problem", "status", "speedup", "95 % band"]
    header += [*(["vs compile"] if compiled else []), "roofline", "tokens", "$"]
    header += ["wall s", "set aside", "note"]
    lines += ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    for row in report["rows"]:
        over = row.get("speedup_vs_compile")
        cells = [
            row["key"],
            row["status"],
            f"{row['speedup']:.3g}x" if row["speedup"] is not None else "-",
            _band_text(row.get("speedup_band")),
            *([f"{over:.3g}x" if over is not None else "-"] if compiled else []),
            f"{row['roofline_fraction']:.1%}" if row["roofline_fraction"] is not None else "-",
            row["tokens"] if row["tokens"] is not None else "-",
            f"{row['dollars']:.4f}" if row["dollars"] is not None else "-",
            row["wall_s"] if row["wall_s"] is not None else "-",
            row["set_aside"] or "",
            row["message"][:120],
        ]
        lines.append("| " + " | ".join(str(c).replace("|", "/").replace("\n", " ") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def _band_text(band) -> str:
    if not band:
        return "-"
    low, high = band
    return f"{low:.3g}-{high:.3g}x" + ("" if low > 1.0 or high < 1.0 else " (no significant change)")


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
