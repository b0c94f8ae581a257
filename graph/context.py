"""The run's settings as the graph's context schema: Studio shows them as a form, the CLI fills them from flags."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal

DEFAULT_PROBLEM = "fused_residual_norm"
DEFAULT_MODEL = "google_genai:gemini-2.5-pro"


@dataclass(kw_only=True)
class RunContext:
    """What one scientist run works on, with which model and device, and how long it may go on."""

    problem: str = field(default=DEFAULT_PROBLEM, metadata={"description": "Bundled problem name or problem file."})
    model: str = field(
        default_factory=lambda: os.environ.get("KS_MODEL", DEFAULT_MODEL),
        metadata={"description": "Chat model: 'provider:model' or 'replay:PATH' (a cassette)."},
    )
    role_models: dict[str, str] = field(
        default_factory=dict, metadata={"description": "Per-role model overrides, e.g. {'hypothesizer': 'replay:X'}."}
    )
    device: str = field(default="auto", metadata={"description": "'auto' (a GPU if present), 'cuda' or 'cpu'."})
    target: str = field(
        default="",
        metadata={
            "description": "The architecture the kernels are for (mi300x, mi325x, mi355x, h100, h200, a100, cpu); "
            "empty: the device that evaluates."
        },
    )
    cluster: str | None = field(
        default=None,
        metadata={
            "description": "Where evaluations run: this host (None, 'local') or Ray ('ray', 'auto', 'ray://H:P')."
        },
    )
    strategy: Literal["scientist", "sampling", "tree"] = field(
        default="scientist",
        metadata={
            "description": "'scientist' (selector, two-stage designer), 'sampling' (best-of-N from the starting "
            "kernel, same implementer and budget) or 'tree' (epsilon-greedy over the lineage tree, then the designer)."
        },
    )
    iterations: int = field(default=3, metadata={"description": "Iterations of select, design, implement."})
    avenues: int = field(default=10, metadata={"description": "Broad avenues the designer names per iteration."})
    plans: int = field(default=5, metadata={"description": "Concrete plans the designer writes on the avenues."})
    experiments_per_iteration: int = field(
        default=3, metadata={"description": "Plans kept by the paper's rule and implemented per iteration."}
    )
    max_debug_attempts: int = field(
        default=2, metadata={"description": "Debugger rounds before a failure is recorded."}
    )
    max_tokens: int | None = field(default=None, metadata={"description": "Stop after this many LLM tokens."})
    max_dollars: float | None = field(default=None, metadata={"description": "Stop after this much LLM cost (USD)."})
    max_minutes: float | None = field(default=None, metadata={"description": "Stop after this much wall time."})
    retrieval: Literal["hybrid", "lexical"] = field(
        default="hybrid", metadata={"description": "Literature search: 'hybrid' or 'lexical' (no embedding model)."}
    )
    speed_of_light: float = field(
        default=0.95, metadata={"description": "Stop once the best kernel reaches this fraction of its roofline."}
    )
    tree_epsilon: float = field(
        default=0.2, metadata={"description": "The tree strategy's exploration rate, raised while the best stalls."}
    )
    compile_baseline: bool = field(
        default=False, metadata={"description": "Also time torch.compile(reference): speedups over it are reported."}
    )
    profile: bool = field(default=True, metadata={"description": "Profile each base (ncu / rocprofv3) if present."})
    passages_per_query: int = field(default=3, metadata={"description": "Literature passages kept per query."})
    run_dir: str = field(default="", metadata={"description": "Where the archive and report go (default runs/<id>)."})
    record_cassette: str = field(default="", metadata={"description": "Write every LLM call to this cassette."})
