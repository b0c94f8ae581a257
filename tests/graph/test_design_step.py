"""The design step on the bundled demo cassette, on the CPU: the target's literature in front of the designer,
every call in the transcript, and malformed answers that never reach the evaluator.

Each run is the demo's first iteration (its kernels really compiled, checked and timed in Triton's interpreter).
"""

import ast
import json

import pytest

from agents.cassette import read_cassette
from agents.parsing import extract_source
from graph.lab import ARCHIVE_FILE
from graph.run import DEMO_CASSETTE
from kernels.archive import Archive

from .conftest import CPU, ROOT, EvaluationSpy, cli, read_summary

pytestmark = pytest.mark.slow


def transcript(run_dir) -> dict[str, list[dict]]:
    """The run's transcript lines by call id."""
    lines: dict[str, list[dict]] = {}
    for line in (run_dir / "transcript.jsonl").read_text().splitlines():
        entry = json.loads(line)
        lines.setdefault(entry["call_id"], []).append(entry)
    return lines


@pytest.mark.parametrize(
    ("target", "folder", "words"),
    [("mi300x", "literature/cdna3/", ("wavefronts", "LDS", "MFMA")), ("h100", "literature/hopper/", ("TMA",))],
)
def test_the_target_puts_its_own_documents_in_front_of_the_designer(tmp_path, target, folder, words):
    run_dir = tmp_path / target
    args = ["--model", f"replay:{DEMO_CASSETTE}", "--iterations", "1", "--experiments-per-iteration", "1", *CPU]
    assert cli(*args, "--target", target, "--out", str(run_dir)) == 0
    calls = transcript(run_dir)
    for call_id in ("i1.hypothesizer.avenues", "i1.hypothesizer.plans"):
        prompt = calls[call_id][0]["prompt"]
        assert f"## Target: {target}" in prompt and all(word in prompt for word in words)
    avenues = calls["i1.hypothesizer.avenues"][0]["prompt"]
    passages = [line for line in avenues.splitlines() if line.startswith("[") and "source:" in line]
    assert any(folder in line for line in passages), passages
    other = "literature/hopper/" if target == "mi300x" else "literature/cdna3/"
    assert sum(folder in line for line in passages) > sum(other in line for line in passages)
    summary = read_summary(run_dir)
    assert summary["target"]["name"] == target
    report = (run_dir / "report.md").read_text()
    assert f"(`{target}`;" in report
    # The demo's answers were written by hand: every call, and the report, name the cassette, never the model
    # its header names to price the token counts.
    entries = [entry for entries in calls.values() for entry in entries]
    assert {(e["model"], e["recorded_from"]) for e in entries} == {(f"replay:{DEMO_CASSETTE}", "authored by hand")}
    assert f"- model: `replay:{DEMO_CASSETTE}`\n" in report
    assert f"replayed from {DEMO_CASSETTE.name}, a cassette authored by hand" in report
    assert summary["cost_usd"] > 0  # priced by the cassette's price table all the same


def malformed(clean: dict) -> dict:
    """The demo cassette with malformed answers put in front of the good ones, ids kept (re-asks: <id>.r1)."""
    answers = {call["call_id"]: call for call in clean["calls"]}

    def reply(call_id: str, content: str, **response) -> dict:
        good = answers[call_id.split(".r")[0]]
        return good | {"call_id": call_id, "response": good["response"] | {"content": content, **response}}

    def shifted(call_id: str, bad: str, **response) -> list[dict]:
        return [reply(call_id, bad, **response), reply(f"{call_id}.r1", answers[call_id]["response"]["content"])]

    def good(call_id: str) -> str:
        return answers[call_id]["response"]["content"]

    plans = good("i1.hypothesizer.plans")
    code = good("i1.s0.implementer.a0")
    thinking = (
        "<think>The error names {'module': 'triton.langauge'}; a first idea:\n```python\nclass ModelNew(nn.Module):\n"
        '    def forward(self, x):\n        return (x\n```\nand {"base_id": "c0001"} is not relevant.</think>\n'
    )
    replaced = {
        # empty, then an answer behind a reasoning block with braces
        "i1.selector": [reply("i1.selector", ""), reply("i1.selector.r1", thinking + good("i1.selector"))],
        # cut off mid-JSON
        "i1.hypothesizer.avenues": shifted("i1.hypothesizer.avenues", good("i1.hypothesizer.avenues")[:900]),
        # a dict in an earlier code block (and a json block without the expected keys) before the answer
        "i1.hypothesizer.plans": [
            reply(
                "i1.hypothesizer.plans",
                'Tile settings first:\n```python\nconfig = {"BLOCK_H": 1024, "num_warps": 8}\n```\n'
                '```json\n{"note": "plans follow"}\n```\n' + plans,
            )
        ],
        # cut off mid-code: no closing fence
        "i1.s0.implementer.a0": shifted("i1.s0.implementer.a0", code[: len(code) // 2]),
        # a reasoning block with braces and a broken draft inside, then the answer
        "i1.s0.debugger.a1": [reply("i1.s0.debugger.a1", thinking + good("i1.s0.debugger.a1"))],
        # whole-looking, but the provider says the token limit stopped it
        "i1.s1.implementer.a0": shifted(
            "i1.s1.implementer.a0", good("i1.s1.implementer.a0"), response_metadata={"finish_reason": "length"}
        ),
        # cut off mid-code with a closing fence after it: does not parse
        "i1.s2.implementer.a0": shifted(
            "i1.s2.implementer.a0", good("i1.s2.implementer.a0")[: len(good("i1.s2.implementer.a0")) * 2 // 3] + "\n```"
        ),
    }
    calls = [entry for call in clean["calls"] for entry in replaced.get(call["call_id"], [call])]
    note = (
        "Authored by hand (derived by tests/graph/test_design_step.py from the demo cassette): malformed answers first."
    )
    return clean | {"authored_by_hand": True, "note": note, "calls": calls}


def test_malformed_answers_are_re_asked_and_the_run_keeps_the_clean_candidates(tmp_path, monkeypatch):
    import evaluators

    clean = read_cassette(DEMO_CASSETTE)
    cassette = tmp_path / "malformed.json"
    cassette.write_text(json.dumps(malformed(clean), indent=1))
    spy = EvaluationSpy()
    monkeypatch.setattr(evaluators, "evaluate", spy)
    run_dir = tmp_path / "run"
    assert cli("--model", f"replay:{cassette}", "--iterations", "1", *CPU, "--out", str(run_dir)) == 0

    for source in spy.sources:
        ast.parse(source)  # no unparsable source reached the evaluator
    # The same candidates as the clean cassette: each slot's final source is the clean answer's.
    answers = {call["call_id"]: call["response"]["content"] for call in clean["calls"]}
    finals = ["i1.s0.debugger.a1", "i1.s1.implementer.a0", "i1.s2.implementer.a0"]
    records = [r for r in Archive(run_dir / ARCHIVE_FILE).records if r.experiment]
    assert [(r.slot, r.status, r.debug_attempts) for r in records] == [
        (0, "correct", 1),
        (1, "correct", 0),
        (2, "correct", 0),
    ]
    assert [r.source for r in records] == [extract_source(answers[call_id]) for call_id in finals]
    # Only the seed, slot 0's draft and the final sources were evaluated (a strict re-run may repeat one).
    draft = extract_source(answers["i1.s0.implementer.a0"])
    assert set(spy.sources) - {r.source for r in records} - {draft} == {
        (ROOT / "kernels/seeds/fused_residual_norm.py").read_text()
    }

    calls = transcript(run_dir)
    for call_id in ("i1.selector.r1", "i1.hypothesizer.avenues.r1", "i1.s0.implementer.a0.r1"):
        assert call_id in calls, sorted(calls)
    assert "Your reply was cut off before it ended" in calls["i1.s0.implementer.a0.r1"][0]["prompt"]
    assert "output-token limit stopped it" in calls["i1.s1.implementer.a0.r1"][0]["prompt"]
    assert "the reply was empty" in calls["i1.selector.r1"][0]["prompt"]
    assert calls["i1.s1.implementer.a0"][0]["stop_reason"] == "length"
    entry = calls["i1.s0.debugger.a1"][0]
    assert entry.keys() >= {"call_id", "role", "model", "prompt", "answer", "input_tokens", "output_tokens", "seconds"}
    assert entry["role"] == "debugger" and "The base version the plan starts from" in entry["prompt"]
    assert "[transcript.jsonl](transcript.jsonl)" in (run_dir / "report.md").read_text()
