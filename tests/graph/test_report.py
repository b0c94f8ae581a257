"""The report files from an archive: summary fields, lineage, notebook and the SVG plot."""

import json
import xml.etree.ElementTree as ElementTree

from agents.accounting import LLMCall
from graph.context import RunContext
from graph.plot import speedup_svg
from graph.report import lineage_tree, write_report
from kernels.archive import Archive, CandidateRecord


def timing(speedup: float, **fields) -> dict:
    """An evaluation's figures as the archive keeps them, with the noise band every timed speedup carries."""
    return {"timing": "interpreter", "baseline_ms": 0.2, "speedup_band": [0.9 * speedup, 1.1 * speedup]} | fields


def _archive(path):
    archive = Archive(path / "archive.jsonl")
    archive.add(CandidateRecord(id="c0000", source="ref", status="reference", speedup=1.0, runtime_ms=0.2))
    archive.add(
        CandidateRecord(id="c0001", parent_id="c0000", source="seed", status="seed", speedup=0.001, eval=timing(0.001))
    )
    experiment = {"title": "fuse", "expected_speedup_min": 1.5, "expected_speedup_max": 3}
    archive.add(
        CandidateRecord(
            id="c0002",
            parent_id="c0001",
            iteration=1,
            source="fused",
            status="correct",
            speedup=0.003,
            experiment=experiment,
            debug_attempts=1,
            eval=timing(0.003),
        )
    )
    archive.add(
        CandidateRecord(
            id="c0003",
            parent_id="c0001",
            iteration=1,
            slot=1,
            source="bad",
            status="incorrect",
            experiment={"title": "exp2 | silu"},
            eval={"message": "max abs err 0.9"},
            note="given up",
        )
    )
    return archive


def test_report_files_name_the_best_kernel_and_count_outcomes(tmp_path):
    _archive(tmp_path)
    calls = [LLMCall(role="selector", call_id="i1.selector", model="m", input_tokens=10, output_tokens=5, cost_usd=0.1)]
    state = {"problem": "p", "device": "cpu", "iteration": 1, "llm_calls": calls, "stop_reason": "iterations: 1 of 1"}
    write_report(tmp_path, state, RunContext(model="replay:x.json"))
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["best_id"] == "c0002"  # the reference is the yardstick, not a kernel
    assert summary["best_speedup"] == 0.003
    assert summary["statuses"] == {"correct": 1, "incorrect": 1}
    assert summary["per_role"]["selector"]["input_tokens"] == 10
    assert summary["tokens"] == 15 and summary["timing"] == "interpreter"
    assert (tmp_path / "best_kernel.py").read_text() == "fused"
    report = (tmp_path / "report.md").read_text()
    assert "![speedup over iterations](speedup.svg)" in report
    assert "exp2 / silu" in report  # a pipe inside a cell would break the table
    ElementTree.fromstring((tmp_path / "speedup.svg").read_text())


def test_a_candidate_set_aside_is_listed_with_its_reason_and_never_the_headline(tmp_path):
    archive = _archive(tmp_path)
    reason = "speedup 1972.0x is beyond the plausible 10x; the strict re-evaluation: incorrect: trial 3 differs"
    experiment = {"title": "memoize on data_ptr"}
    archive.add(
        CandidateRecord(
            id="c0004", parent_id="c0002", iteration=2, source="cheat", status="correct", speedup=1972.0,
            experiment=experiment, set_aside=reason, strict_eval={"strict": True, "status": "incorrect"},
        )
    )  # fmt: skip
    archive.add(
        CandidateRecord(
            id="c0005", parent_id="c0002", iteration=2, slot=1, source="honest", status="correct", speedup=0.002,
            experiment={"title": "vectorize"}, cleared_by_strict=True,
        )
    )  # fmt: skip
    state = {"problem": "p", "device": "cpu", "iteration": 2, "stop_reason": "iterations: 2 of 2"}
    write_report(tmp_path, state, RunContext(model="replay:x.json"))
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["best_id"] == "c0002" and (tmp_path / "best_kernel.py").read_text() == "fused"
    assert summary["set_aside"] == [{"id": "c0004", "speedup": 1972.0, "reason": reason}]
    assert summary["cleared_by_strict"] == ["c0005"]
    report = (tmp_path / "report.md").read_text()
    assert "- best: c0002 at 0.003x over the PyTorch reference (95 % noise band" in report
    assert "no gain) (1 set aside by anti-cheat flags" in report
    assert f"- c0004 (1972x as measured): {reason}" in report
    assert "Cleared by a strict re-evaluation: c0005" in report
    assert "c0004 [correct, 1972x, set aside] memoize on data_ptr" in report
    assert "| correct, set aside | 1972x |" in report
    svg = ElementTree.fromstring((tmp_path / "speedup.svg").read_text())
    hollow = [c for c in svg.iter("{http://www.w3.org/2000/svg}circle") if c.get("fill") == "none"]
    assert len(hollow) == 2  # the set-aside candidate and its legend marker


def test_lineage_tree_indents_children_under_parents(tmp_path):
    rows = lineage_tree(_archive(tmp_path))
    assert rows[0].startswith("c0000 [reference")
    assert rows[1].startswith("  c0001 [seed")
    assert rows[2].startswith("    c0002 [correct, 0.003x] fuse")


def test_plot_draws_each_candidate_and_the_best_so_far():
    points = [(0, 1.0, "reference", "c0000"), (0, 0.5, "seed", "c0001"), (1, 2.0, "correct", "c0002")]
    points.append((1, None, "compile_error", "c0003"))
    svg = ElementTree.fromstring(speedup_svg(points, title="t"))
    ns = "{http://www.w3.org/2000/svg}"
    assert len(list(svg.iter(f"{ns}circle"))) == 4  # two candidates and the legend's two circle markers
    assert svg.find(f"{ns}polyline") is not None
    assert any("c0003" in (p.findtext(f"{ns}title") or "") for p in svg.findall(f"{ns}path"))


def test_report_says_where_replayed_answers_came_from(tmp_path):
    from graph.report import replay_note

    authored = tmp_path / "authored.json"
    authored.write_text(json.dumps({"authored_by_hand": True, "model": "m", "calls": []}))
    recorded = tmp_path / "recorded.json"
    recorded.write_text(
        json.dumps({"authored_by_hand": False, "model": "google_genai:x", "recorded_at": "2026-11-01", "calls": []})
    )
    assert replay_note("google_genai:gemini-2.5-pro") is None
    assert "authored by hand" in replay_note(f"replay:{authored}")
    assert "recorded from google_genai:x at 2026-11-01" in replay_note(f"replay:{recorded}")
    assert "no longer readable" in replay_note(f"replay:{tmp_path / 'gone.json'}")


def test_a_role_that_replays_a_cassette_is_never_reported_as_answered_by_the_live_model(tmp_path):
    _archive(tmp_path)
    cassette = tmp_path / "selector.json"
    cassette.write_text(json.dumps({"authored_by_hand": True, "model": "google_genai:gemini-2.5-pro", "calls": []}))
    ctx = RunContext(model="google_genai:gemini-2.5-pro", role_models={"selector": f"replay:{cassette}"})
    write_report(tmp_path, {"problem": "p", "device": "cpu", "iteration": 1}, ctx)
    report = (tmp_path / "report.md").read_text()
    assert (
        f"- model: `replay:{cassette}` (selector); `google_genai:gemini-2.5-pro` (hypothesizer, implementer, debugger)"
        in report
    )
    assert "- note: the selector LLM answers replayed from selector.json, a cassette authored by hand" in report


def test_the_headline_gives_the_speedup_over_torch_compile_when_it_was_measured(tmp_path):
    archive = _archive(tmp_path)
    archive.add(
        CandidateRecord(
            id="c0004", parent_id="c0002", iteration=2, source="faster", status="correct", speedup=0.004,
            experiment={"title": "tile"}, eval=timing(0.004, speedup_vs_compile=0.5),
        )
    )  # fmt: skip
    write_report(tmp_path, {"problem": "p", "device": "cpu", "iteration": 2}, RunContext(compile_baseline=True))
    assert json.loads((tmp_path / "summary.json").read_text())["best_speedup_vs_compile"] == 0.5
    report = (tmp_path / "report.md").read_text()
    assert "- best: c0004 at 0.004x over the PyTorch reference (95 % noise band" in report
    assert "changes inside it are no gain), 0.5x over torch.compile" in report


def test_each_iteration_says_what_was_taken_from_its_reference(tmp_path):
    from graph.report import design_section
    from kernels.labbook import DesignRecord

    plan = {"title": "warps", "avenue": 1, "expected_speedup_min": 1, "expected_speedup_max": 1.1, "risk": "low"}
    plans = [plan | {"anchors": [], "innovation": 3}, plan | {"title": "tiles", "anchors": [], "innovation": 5}]
    plans[1]["from_reference"] = "c0003's 64-wide tiles"
    with_reference = DesignRecord(
        iteration=2, base_id="c0002", reference_id="c0003", contrast="lineage", rationale="r", target="mi300x",
        lesson="the second pass costs more than it buys", plans=plans, chosen=[{"index": 0, "reason": "a"},
        {"index": 1, "reason": "b"}],
    )  # fmt: skip
    text = "\n".join(design_section(with_reference))
    assert "Designed for: `mi300x`." in text and "taught: the second pass costs more than it buys" in text
    assert "Taken from c0003 by the chosen plans:\n\n- tiles: c0003's 64-wide tiles" in text
    alone = "\n".join(design_section(DesignRecord(iteration=1, base_id="c0001", rationale="r")))
    assert "No reference this iteration" in alone


def test_the_summary_names_the_target_the_output_limits_and_the_transcript(tmp_path):
    _archive(tmp_path)
    (tmp_path / "transcript.jsonl").write_text('{"call_id": "i1.selector"}\n{"call_id": "i1.selector.r1"}\n')
    ctx = RunContext(device="cpu", target="h200", model="replay:x.json")
    write_report(tmp_path, {"problem": "p", "device": "cpu", "iteration": 1}, ctx)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["target"]["name"] == "h200" and summary["output_token_limits"]["implementer"] > 0
    assert summary["transcript"] == "transcript.jsonl" and summary["model_calls"] == 2
    report = (tmp_path / "report.md").read_text()
    assert "- target: NVIDIA H200 SXM (`h200`;" in report and "[transcript.jsonl](transcript.jsonl)" in report
    assert "- output-token limit per role: selector 8192" in report


def test_the_default_target_is_the_gpu_the_evaluator_ran_on():
    from graph import lab

    archive = Archive()
    archive.add(
        CandidateRecord(id="c0000", source="s", status="seed", speedup=1.0, eval={"gpu": "AMD Instinct MI300X #3"})
    )
    assert lab.run_target(RunContext(), "cuda", archive).name == "mi300x"
    assert lab.run_target(RunContext(target="h100"), "cuda", archive).name == "h100"
    assert lab.run_target(RunContext(), "cpu", Archive()).name == "cpu"
