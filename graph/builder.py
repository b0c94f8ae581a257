"""The scientist's graph: `build_graph()` for the CLI, and a module-level `graph` for LangGraph Studio."""

from __future__ import annotations

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from graph.context import RunContext
from graph.experiment import build_experiment_graph
from graph.loop import hypothesizer, record, selector, setup
from graph.report import report
from graph.state import ScientistState


def build_graph(checkpointer: BaseCheckpointSaver | None = None) -> CompiledStateGraph:
    """The scientist: setup, selector, hypothesizer, parallel experiments, record (loop) and report."""
    builder = StateGraph(ScientistState, context_schema=RunContext)
    builder.add_node("setup", setup)
    builder.add_node("selector", selector)
    builder.add_node("hypothesizer", hypothesizer)
    builder.add_node("experiment", build_experiment_graph())
    builder.add_node("record", record)
    builder.add_node("report", report)
    builder.add_edge(START, "setup")
    builder.add_edge("selector", "hypothesizer")
    builder.add_edge("experiment", "record")
    return builder.compile(checkpointer=checkpointer, name="kernel-scientist")


# Studio (`langgraph dev`) supplies its own persistence and refuses a graph compiled with a checkpointer.
graph = build_graph()
