import json

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

from agents.cassette import RecordingChatModel, ReplayChatModel
from agents.errors import FatalLLMError
from agents.models import (
    PROVIDERS,
    REQUEST_TIMEOUT_S,
    ROLE_MAX_OUTPUT_TOKENS,
    ROLE_TEMPERATURE,
    ModelSettings,
    _timeout_options,
    make_chat_model,
    parse_role_overrides,
)
from agents.transcript import TranscriptChatModel


def ask(model, text, call_id, role="selector"):
    return model.invoke(
        [HumanMessage(text)], config={"metadata": {"ks_call_id": call_id, "ks_role": role}, "tags": [role]}
    )


def test_record_then_replay_round_trip(tmp_path):
    path = tmp_path / "run.json"
    live = GenericFakeChatModel(
        messages=iter(
            [
                AIMessage("first", usage_metadata={"input_tokens": 5, "output_tokens": 1, "total_tokens": 6}),
                AIMessage("second", usage_metadata={"input_tokens": 7, "output_tokens": 2, "total_tokens": 9}),
            ]
        )
    )
    recorder = RecordingChatModel(inner=live, path=path, spec="fake:live")
    assert ask(recorder, "q1", "i1.selector").content == "first"
    assert ask(recorder, "q2", "i1.hypothesizer", role="hypothesizer").content == "second"

    data = json.loads(path.read_text())
    assert data["authored_by_hand"] is False and data["model"] == "fake:live" and data["recorded_at"]
    assert [c["call_id"] for c in data["calls"]] == ["i1.selector", "i1.hypothesizer"]
    assert data["calls"][1]["role"] == "hypothesizer"
    assert data["calls"][0]["messages"] == [{"role": "human", "content": "q1"}]

    replay = make_chat_model(f"replay:{path}", role="hypothesizer")
    # Order of calls does not matter: answers are keyed by call id.
    answer = ask(replay, "anything", "i1.hypothesizer", role="hypothesizer")
    assert answer.content == "second" and answer.usage_metadata["input_tokens"] == 7
    assert ask(replay, "q1", "i1.selector").content == "first"


def test_replay_miss_names_the_call_and_role(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"authored_by_hand": True, "model": "m", "calls": []}))
    replay = ReplayChatModel(path=path, role="debugger")
    with pytest.raises(FatalLLMError, match=r"i4\.s1\.debugger\.a2.*role debugger"):
        ask(replay, "fix it", "i4.s1.debugger.a2", role="debugger")


def test_replay_serves_a_repeated_call_id_in_order_then_misses(tmp_path):
    path = tmp_path / "c.json"
    calls = [{"call_id": "a", "role": "r", "messages": [], "response": {"content": str(i)}} for i in range(2)]
    path.write_text(json.dumps({"authored_by_hand": True, "model": "m", "calls": calls}))
    replay = ReplayChatModel(path=path)
    assert [ask(replay, "q", "a").content for _ in range(2)] == ["0", "1"]
    with pytest.raises(FatalLLMError, match="only 2"):
        ask(replay, "q", "a")


def test_replay_without_call_id_or_cassette_fails_clearly(tmp_path):
    with pytest.raises(FatalLLMError, match="not found"):
        ReplayChatModel(path=tmp_path / "missing.json")
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"calls": []}))
    with pytest.raises(FatalLLMError, match="needs a call id"):
        ReplayChatModel(path=path).invoke("hi")


def test_factory_errors_are_one_line(monkeypatch):
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    for spec, message in [
        ("nocolon", "not 'provider:model'"),
        ("nosuch:model", "unknown model provider 'nosuch'"),
        ("openai:gpt-4o", "needs the package langchain-openai"),
        ("google_genai:gemini-2.5-pro", "API key required"),
    ]:
        with pytest.raises(FatalLLMError, match=message) as caught:
            make_chat_model(spec, role="selector")
        assert "\n" not in str(caught.value)


def test_gemini_gets_role_temperature_and_one_sdk_attempt(monkeypatch):
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
    model = make_chat_model("google_genai:gemini-2.5-pro", role="hypothesizer")
    assert model.temperature == ROLE_TEMPERATURE["hypothesizer"] > ROLE_TEMPERATURE["implementer"]
    assert model.max_retries == 1  # 0 would mean "SDK default retries" in langchain-google-genai
    assert make_chat_model("google_genai:gemini-2.5-flash", role="debugger", temperature=0.5).temperature == 0.5


def test_every_live_model_gets_a_request_timeout_and_its_role_output_limit(monkeypatch):
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
    model = make_chat_model("google_genai:gemini-2.5-pro", role="implementer")
    assert model.timeout == REQUEST_TIMEOUT_S and model.max_output_tokens == ROLE_MAX_OUTPUT_TOKENS["implementer"]
    assert make_chat_model("google_genai:gemini-2.5-pro", role="selector").max_output_tokens == 8192
    # Every other provider names its timeout option; Ollama's goes to its client, Bedrock's to a botocore Config.
    spelled = {name for name, provider in PROVIDERS.items() if provider.timeout_key is not None}
    assert set(PROVIDERS) - spelled == {"ollama", "bedrock_converse"}
    assert _timeout_options("ollama", PROVIDERS["ollama"]) == {"client_kwargs": {"timeout": REQUEST_TIMEOUT_S}}


def test_replay_and_recording_keep_the_stop_reason(tmp_path):
    path = tmp_path / "run.json"
    live = GenericFakeChatModel(messages=iter([AIMessage("cut", response_metadata={"finish_reason": "length"})]))
    assert ask(RecordingChatModel(inner=live, path=path, spec="fake:live"), "q", "i1.selector").content == "cut"
    replayed = ask(make_chat_model(f"replay:{path}", role="selector"), "q", "i1.selector")
    assert replayed.response_metadata["finish_reason"] == "length"


def test_settings_per_role_overrides_and_recording(monkeypatch, tmp_path):
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
    cassette = tmp_path / "c.json"
    cassette.write_text(json.dumps({"calls": []}))
    settings = ModelSettings(
        per_role=parse_role_overrides([f"debugger=replay:{cassette}", "selector=google_genai:gemini-2.5-flash"]),
        record_to=tmp_path / "rec.json",
    )
    assert settings.spec_for("implementer") == "google_genai:gemini-2.5-pro"
    # A replayed role has no live call to record: refused in one line, never recorded silently as nothing.
    with pytest.raises(FatalLLMError, match="records live models, but debugger replay a cassette") as refused:
        settings.make("debugger")
    assert "\n" not in str(refused.value)
    assert isinstance(settings.model_copy(update={"record_to": None}).make("debugger"), ReplayChatModel)
    recorder = settings.make("selector")
    assert isinstance(recorder, RecordingChatModel) and recorder.inner.model == "gemini-2.5-flash"
    with pytest.raises(FatalLLMError, match="bad model override"):
        parse_role_overrides(["planner=x:y"])
    with pytest.raises(ValueError, match="unknown roles"):
        ModelSettings(per_role={"planner": "x:y"})


def test_a_replayed_call_names_its_cassette_not_the_model_the_cassette_names(tmp_path):
    from agents.accounting import cost_of
    from agents.retry import invoke_with_retries
    from tests.agents.fakes import USAGE, scripted

    call = {"call_id": "i1.selector", "role": "selector", "messages": [], "response": {"content": "ok"}}
    call["response"]["usage_metadata"] = USAGE
    authored, recorded = tmp_path / "authored.json", tmp_path / "recorded.json"
    # A hand-authored cassette names a model too: the price table its estimated token counts are costed with.
    authored.write_text(json.dumps({"authored_by_hand": True, "model": "google_genai:gemini-2.5-pro", "calls": [call]}))
    header = {"authored_by_hand": False, "model": "google_genai:gemini-2.5-flash", "recorded_at": "2026-11-01"}
    recorded.write_text(json.dumps(header | {"calls": [call]}))
    transcript = tmp_path / "transcript.jsonl"
    models = [
        ModelSettings(default=f"replay:{path}", transcript_to=transcript).make("selector")
        for path in (authored, recorded)
    ]
    models.append(TranscriptChatModel(inner=scripted("ok"), path=transcript))
    accounted = [
        invoke_with_retries(model, [HumanMessage("q")], role="selector", call_id="i1.selector")[1] for model in models
    ]

    entries = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert [(e["model"], e.get("recorded_from")) for e in entries] == [
        (f"replay:{authored}", "authored by hand"),
        (f"replay:{recorded}", "google_genai:gemini-2.5-flash"),
        ("gemini-2.5-pro", None),  # a live call has nothing to add: its model answered
    ]
    assert [c.model for c in accounted] == [f"replay:{authored}", f"replay:{recorded}", "gemini-2.5-pro"]
    # Replays are still priced by the cassette's model, so budgets in dollars hold on a replayed run.
    assert [c.cost_usd for c in accounted] == [
        pytest.approx(cost_of("gemini-2.5-pro", USAGE)),
        pytest.approx(cost_of("gemini-2.5-flash", USAGE)),
        pytest.approx(cost_of("gemini-2.5-pro", USAGE)),
    ]
    assert accounted[1].cost_usd > 0
