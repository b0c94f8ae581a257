"""The graph as Studio draws it: every node, every routed edge, the context form, and langgraph.json."""

import importlib.util
import json
from dataclasses import fields
from pathlib import Path

from graph.builder import build_graph, graph
from graph.context import RunContext

ROOT = Path(__file__).resolve().parents[2]
CASSETTES = ROOT / "tests" / "cassettes" / "graph"


def _edges(drawn) -> set[tuple[str, str]]:
    return {(edge.source, edge.target) for edge in drawn.edges}


def test_every_node_and_routed_edge_is_drawn():
    drawn = graph.get_graph(xray=True)
    nodes = set(drawn.nodes)
    for node in ("setup", "selector", "hypothesizer", "record", "report"):
        assert node in nodes
    for node in ("implementer", "evaluate", "debugger"):
        assert f"experiment:{node}" in nodes
    edges = _edges(drawn)
    expected = {
        ("__start__", "setup"),
        ("setup", "selector"),
        ("setup", "report"),
        ("selector", "hypothesizer"),
        ("hypothesizer", "experiment:implementer"),
        ("hypothesizer", "record"),
        ("experiment:implementer", "experiment:evaluate"),
        ("experiment:evaluate", "experiment:debugger"),
        ("experiment:debugger", "experiment:evaluate"),
        ("experiment:__end__", "record"),
        ("record", "selector"),
        ("record", "report"),
        ("report", "__end__"),
    }
    assert expected <= edges, expected - edges


def test_studio_graph_has_no_checkpointer_and_the_cli_graph_can_take_one():
    from langgraph.checkpoint.memory import InMemorySaver

    assert graph.checkpointer is None
    assert build_graph(InMemorySaver()).checkpointer is not None


def test_run_settings_are_the_context_schema_with_descriptions():
    schema = graph.get_context_jsonschema()
    for field in fields(RunContext):
        assert field.name in schema["properties"], field.name
        assert field.metadata.get("description"), field.name


def test_langgraph_json_points_at_the_module_level_graph():
    config = json.loads((ROOT / "langgraph.json").read_text())
    module_path, _, attribute = config["graphs"]["kernel_scientist"].partition(":")
    assert (ROOT / module_path).resolve() == ROOT / "graph" / "builder.py"
    assert attribute == "graph"


def test_authored_cassettes_are_what_the_authoring_script_writes():
    spec = importlib.util.spec_from_file_location("author", CASSETTES / "author.py")
    author = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(author)
    for path, build in author.CASSETTES.items():
        assert path.read_text() == author.render(build()), f"{path.name} is stale: run tests/cassettes/graph/author.py"
        header = json.loads(path.read_text())
        assert header["authored_by_hand"] is True and "Authored by hand" in header["note"]
