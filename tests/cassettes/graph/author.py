"""Author the graph's hand-written cassettes from the kernel sources beside this file.

Run `python tests/cassettes/graph/author.py` after changing a kernel or an answer; tests/graph checks that the
JSON files on disk are what this script writes. No live model is reachable from this project's machines, so
every answer here is written by us; the headers say so.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
KERNELS = HERE / "kernels"
REPO = HERE.parents[2]
DEMO = REPO / "agents" / "cassettes" / "demo_fused_residual_norm.json"
MODEL = "google_genai:gemini-2.5-pro"
AUTHORED_ON = "2026-11-21"
# Token counts are our estimates of what Gemini would bill for these prompts and answers (about 4 characters a
# token), so budgets and cost accounting have realistic numbers to work with.
USAGE = {
    "selector": (1400, 160),
    "hypothesizer": (5200, 1100),
    "implementer": (3300, 1300),
    "debugger": (3600, 1300),
}


def kernel(name: str) -> str:
    """A candidate source, as the implementer or debugger returns it."""
    return (KERNELS / f"{name}.py").read_text()


def draft_with_syntax_error() -> str:
    """The fused kernel as a first draft that drops a closing parenthesis (a compile error on any device)."""
    source = kernel("fused_rows")
    line = "    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=1) / n_cols + eps)\n"
    assert line in source, "fused_rows.py changed: update the draft's edit"
    return source.replace(line, line.replace("eps)", "eps"))


def call(call_id: str, content: str) -> dict:
    """One cassette entry; the role is the call id's role part."""
    role = next(part for part in call_id.split(".") if part in USAGE)
    input_tokens, output_tokens = USAGE[role]
    usage = {"input_tokens": input_tokens, "output_tokens": output_tokens, "total_tokens": input_tokens + output_tokens}
    return {"call_id": call_id, "role": role, "messages": [], "response": {"content": content, "usage_metadata": usage}}


def selection(base_id: str, reference_id: str | None, rationale: str, preamble: str = "") -> str:
    """A selector answer: the JSON object in a fence, as Gemini tends to write it."""
    body = json.dumps({"base_id": base_id, "reference_id": reference_id, "rationale": rationale}, indent=1)
    return f"{preamble}```json\n{body}\n```"


def experiment(title, change, mechanism, low, high, risk, citations=()) -> dict:
    """One proposed experiment."""
    return {
        "title": title,
        "change": change,
        "mechanism": mechanism,
        "expected_speedup_min": low,
        "expected_speedup_max": high,
        "risk": risk,
        "citations": list(citations),
    }


def hypotheses(experiments: list[dict], chosen: list[int], rule: str) -> str:
    """A hypothesizer answer."""
    body = json.dumps({"experiments": experiments, "chosen": chosen, "choice_rule": rule}, indent=1)
    return f"```json\n{body}\n```"


def code(source: str, preamble: str) -> str:
    """An implementer or debugger answer: a sentence, then the module in one fence."""
    return f"{preamble}\n\n```python\n{source}```\n"


FUSE = experiment(
    "Fuse residual add, RMSNorm and SiLU gate into one row-wise pass",
    "Replace the three kernels by one: each program loads its rows of x, residual and gate once, computes the "
    "fp32 statistics in registers and writes out once.",
    "The seed moves h and y through DRAM between kernels: about 9 tensor passes instead of 4. The problem is "
    "memory bound, so time follows bytes moved.",
    1.8,
    2.6,
    "medium",
    ["notebook"],
)
EXP2 = experiment(
    "SiLU through exp2",
    "Compute sigmoid(g) as 1 / (1 + exp2(-g * log2(e))) inside the fused kernel.",
    "exp lowers to a multiply and an ex2 special-function instruction; writing exp2 lets the scale fold into "
    "an existing multiply, freeing issue slots.",
    1.0,
    1.08,
    "low",
)
TILED = experiment(
    "Stream the row in 64-wide tiles over two passes",
    "One program per row; pass 1 accumulates the sum of squares tile by tile, pass 2 reloads each tile, "
    "normalises and writes the gated output.",
    "Bounds registers per thread independently of H, raising occupancy for very wide rows; the second read "
    "should mostly hit L2.",
    0.9,
    1.2,
    "medium",
)
BIG_BLOCKS = experiment(
    "Larger blocks for the elementwise kernels",
    "Keep the seed's three kernels but use 4096-element blocks for the residual add and the SiLU gate.",
    "Fewer, longer programs amortise launch and index arithmetic; each still streams contiguous memory.",
    1.02,
    1.15,
    "low",
)
EVICT = experiment(
    "Cache hints: stream activations, keep the weight",
    "Load x, residual and gate with eviction_policy='evict_first' and the weight with 'evict_last'.",
    "The activations are touched once; evicting them first keeps the shared weight row resident in L2.",
    1.0,
    1.06,
    "low",
)
WARPS = experiment(
    "Scale num_warps with the tile",
    "Choose num_warps so that each thread handles about 16 elements per tensor (4 warps at 1k, 16 at 4k+).",
    "A fixed 8 warps leaves 4k-wide rows register heavy and 1k rows under-populated; matching warps to the "
    "tile balances registers against latency hiding.",
    1.0,
    1.1,
    "low",
)
ONE_ROW = experiment(
    "One row per program everywhere",
    "Drop the single-program path for small problems: always launch one program per row.",
    "More programs in flight hide memory latency better, whatever the problem size.",
    0.95,
    1.1,
    "low",
)
EXP2_RETRY = experiment(
    "SiLU through exp2, scaled correctly",
    "Retry the notebook's failed exp2 SiLU with the identity exp(-g) = exp2(-g * log2(e)), sign and scale checked "
    "against the reference on a few values first.",
    "Same mechanism as before; the earlier attempt failed on the argument's scale and sign, not on the idea.",
    1.0,
    1.08,
    "medium",
    ["notebook"],
)
FIRST_RULE = "0 is the most innovative; 1 has the highest maximum expected speedup of the rest."
RELU_TRITON = experiment(
    "ReLU as one Triton pass over the flattened tensor",
    "Replace torch.relu by a Triton kernel: each program loads 256 contiguous elements, takes max(x, 0), stores.",
    "An elementwise op is memory bound; one pass that reads and writes each element once is the floor.",
    0.9,
    1.2,
    "low",
)
RELU_INPLACE = experiment(
    "ReLU in place",
    "Write the result over the input instead of a new tensor.",
    "Saves an allocation per call.",
    1.0,
    1.05,
    "high",
)
RELU_BLOCKS = experiment(
    "Larger blocks for the ReLU kernel",
    "Use 1024-element blocks: a quarter of the programs, each streaming four times as much.",
    "Fewer programs amortise launch and index arithmetic over more elements.",
    1.0,
    1.15,
    "low",
)


def edges_cassette() -> dict:
    """Two iterations of two experiments that take every edge of the graph (max_debug_attempts=1)."""
    calls = [
        call("i1.selector", selection("c0001", None, "The seed is the only candidate beyond the reference.")),
        call("i1.hypothesizer", hypotheses([FUSE, EXP2, TILED], [0, 1], FIRST_RULE)),
        call("i1.s0.implementer.a0", code(draft_with_syntax_error(), "Here is the fused single-pass kernel.")),
        call("i1.s0.debugger.a1", code(kernel("fused_rows"), "The rstd line was missing its closing parenthesis.")),
        call("i1.s1.implementer.a0", code(kernel("silu_exp2_wrong"), "SiLU now goes through exp2.")),
        call("i1.s1.debugger.a1", code(kernel("silu_exp2_still_wrong"), "exp2 needs its argument rescaled.")),
        # A malformed first answer: the id is not one of those offered; the retry (".r1") is valid.
        call("i2.selector", selection("fused", None, "The fused kernel.", preamble="Picking the fused kernel.\n")),
        call("i2.selector.r1", selection("c0002", None, "c0002, the fused kernel, is the fastest correct version.")),
        call("i2.hypothesizer", hypotheses([TILED, ONE_ROW, EVICT], [0, 1], FIRST_RULE)),
        call("i2.s0.implementer.a0", code(kernel("column_tiled"), "The row is now streamed in 64-wide tiles.")),
        call("i2.s1.implementer.a0", code(kernel("row_per_program"), "Every row now gets its own program.")),
    ]
    return header("Test cassette for tests/graph: every edge of the graph on fused_residual_norm's cpu shapes.", calls)


def short_cassette() -> dict:
    """Two iterations of one experiment each, all correct: budgets, errors and Studio."""
    calls = [
        call("i1.selector", selection("c0001", None, "The seed is the only candidate beyond the reference.")),
        call("i1.hypothesizer", hypotheses([FUSE, EXP2], [0], "0 is the most innovative.")),
        call("i1.s0.implementer.a0", code(kernel("fused_rows"), "Here is the fused single-pass kernel.")),
        call("i2.selector", selection("c0002", None, "c0002, the fused kernel, is the fastest correct version.")),
        call("i2.hypothesizer", hypotheses([EXP2, WARPS], [0], "0 is the most innovative.")),
        call("i2.s0.implementer.a0", code(kernel("silu_exp2"), "SiLU now goes through exp2.")),
    ]
    return header("Test cassette for tests/graph: short all-correct runs (budgets, errors, Studio).", calls)


def batch_cassette() -> dict:
    """Two iterations of one experiment on each problem of tests/graph/batch_suite (both are ReLU, any shape)."""
    calls = [
        call("i1.selector", selection("c0000", None, "The reference is the only version so far.")),
        call("i1.hypothesizer", hypotheses([RELU_TRITON, RELU_INPLACE], [0], "0 is the most innovative.")),
        call("i1.s0.implementer.a0", code(kernel("relu_flat"), "Here is the Triton ReLU.")),
        call("i2.selector", selection("c0001", None, "c0001, the Triton kernel, is the only custom kernel.")),
        call("i2.hypothesizer", hypotheses([RELU_BLOCKS, RELU_INPLACE], [0], "0 has the lower risk.")),
        call("i2.s0.implementer.a0", code(kernel("relu_flat_blocks"), "Same kernel, 1024-element blocks.")),
    ]
    return header("Test cassette for tests/graph/test_batch.py: the same answers serve both ReLU problems.", calls)


def demo_cassette() -> dict:
    """The bundled demo: three iterations of two experiments on fused_residual_norm (max_debug_attempts=2)."""
    calls = [
        call(
            "i1.selector",
            selection("c0001", None, "The seed is the only kernel so far; its three kernels are the obvious target."),
        ),
        call(
            "i1.hypothesizer",
            hypotheses([FUSE, BIG_BLOCKS, TILED], [0, 1], FIRST_RULE),
        ),
        call("i1.s0.implementer.a0", code(draft_with_syntax_error(), "Here is the fused single-pass kernel.")),
        call(
            "i1.s0.debugger.a1",
            code(kernel("fused_rows"), "SyntaxError: the rstd line lost its closing parenthesis; restored it."),
        ),
        call("i1.s1.implementer.a0", code(kernel("seed_big_blocks"), "Same three kernels, larger elementwise blocks.")),
        call(
            "i2.selector",
            selection(
                "c0002",
                "c0003",
                "c0002 is the fused single-pass kernel, the line of work with the most headroom; c0003 shows the "
                "block-size effect on the unfused kernels for contrast.",
            ),
        ),
        call("i2.hypothesizer", hypotheses([EXP2, TILED, EVICT], [0, 1], FIRST_RULE)),
        call("i2.s0.implementer.a0", code(kernel("silu_exp2_wrong"), "SiLU now goes through exp2.")),
        call(
            "i2.s0.debugger.a1",
            code(kernel("silu_exp2_still_wrong"), "exp2 computes 2**x, so the argument needs rescaling."),
        ),
        call(
            "i2.s0.debugger.a2",
            code(kernel("silu_exp2_sign_lost"), "The scale must be log2(e), not ln(2): exp(x) = exp2(x * log2(e))."),
        ),
        call("i2.s1.implementer.a0", code(kernel("column_tiled"), "The row is now streamed in 64-wide tiles.")),
        call(
            "i3.selector",
            selection(
                "c0002",
                None,
                "c0002 is the fused single-pass kernel the other fast candidates derive from; the exp2 attempt "
                "failed and the tiled variant regressed, so refine c0002 directly.",
            ),
        ),
        call("i3.hypothesizer", hypotheses([EXP2_RETRY, EVICT, WARPS], [0, 1], FIRST_RULE)),
        call("i3.s0.implementer.a0", code(kernel("silu_exp2"), "SiLU through exp2(-g * log2(e)), sign kept.")),
        call("i3.s1.implementer.a0", code(kernel("fused_rows_evict"), "Added cache-eviction hints to the loads.")),
    ]
    note = (
        "Demo of python -m graph.run on fused_residual_norm (3 iterations x 2 experiments, max 2 debug attempts). "
        "The answers are real, runnable kernels, evaluated for real on every run (CPU interpreter or GPU)."
    )
    return header(note, calls)


def header(purpose: str, calls: list[dict]) -> dict:
    """The cassette's header: authored by hand, and what it is for."""
    note = (
        f"Authored by hand, not recorded: no live model was reachable. {purpose} Token counts are estimates; "
        f"'model' names the price table they are costed with, not a model that answered. "
        "Regenerate with python tests/cassettes/graph/author.py."
    )
    return {"authored_by_hand": True, "model": MODEL, "authored_on": AUTHORED_ON, "note": note, "calls": calls}


CASSETTES = {
    HERE / "edges.json": edges_cassette,
    HERE / "short.json": short_cassette,
    HERE / "batch.json": batch_cassette,
    DEMO: demo_cassette,
}


def render(cassette: dict) -> str:
    """The cassette's file text."""
    return json.dumps(cassette, indent=1) + "\n"


if __name__ == "__main__":
    for path, build in CASSETTES.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(build()))
        print(f"wrote {path.relative_to(REPO)}")
