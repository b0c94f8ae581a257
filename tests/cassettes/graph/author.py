"""Author the graph's hand-written cassettes from the kernel sources beside this file.

Run `python tests/cassettes/graph/author.py` after changing a kernel or an answer; tests/graph checks that the
JSON files on disk are what this script writes. No live model is reachable from this project's machines, so
every answer here is written by us; the headers say so.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
KERNELS = HERE / "kernels"
REPO = HERE.parents[2]
sys.path.insert(0, str(REPO))  # run as a script, the project's packages check what is authored here

from agents.anchors import check_edit  # noqa: E402
from agents.choice import choose_plans  # noqa: E402
from agents.schemas import Anchor, Plan  # noqa: E402

DEMO = REPO / "agents" / "cassettes" / "demo_fused_residual_norm.json"
SEED = REPO / "kernels" / "seeds" / "fused_residual_norm.py"
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
    return SEED.read_text() if name == "seed" else (KERNELS / f"{name}.py").read_text()


def draft_with_import_typo() -> str:
    """The fused kernel as a first draft that misspells an import: it parses, and is a compile error on any device.

    (A draft that does not parse is never a candidate: the implementer is asked again, so it could not show the
    debugger at work.)
    """
    source = kernel("fused_rows")
    line = "import triton.language as tl\n"
    assert line in source, "fused_rows.py changed: update the draft's edit"
    return source.replace(line, "import triton.langauge as tl\n")


def evict_with_stray_warps() -> str:
    """The cache-hint kernel that also rewrites the launch's warp count: an edit outside the plan's anchors."""
    source, warps = kernel("fused_rows_evict"), kernel("fused_rows_warps")
    launch = "        out = torch.empty_like(x)\n"
    added = "        # About 16 elements per thread per tensor: 4 warps for 1k-wide tiles, 16 for 4k and wider.\n"
    assert launch in source and added in warps, "fused_rows_evict.py or fused_rows_warps.py changed"
    source = source.replace(launch, added + "        warps = max(4, min(16, rows * block_h // 256))\n" + launch)
    return source.replace("num_warps=8,", "num_warps=warps,")


def four_warps() -> str:
    """The fused kernel launched with 4 warps instead of 8."""
    source = kernel("fused_rows")
    assert "num_warps=8," in source, "fused_rows.py changed: update the four-warp edit"
    return source.replace("num_warps=8,", "num_warps=4,")


def call(call_id: str, content: str) -> dict:
    """One cassette entry; the role is the call id's role part."""
    role = next(part for part in call_id.split(".") if part in USAGE)
    input_tokens, output_tokens = USAGE[role]
    usage = {"input_tokens": input_tokens, "output_tokens": output_tokens, "total_tokens": input_tokens + output_tokens}
    return {"call_id": call_id, "role": role, "messages": [], "response": {"content": content, "usage_metadata": usage}}


def selection(base_id: str, reference_id: str | None, rationale: str, preamble: str = "", contrast=None) -> str:
    """A selector answer: the JSON object in a fence, as Gemini tends to write it."""
    body = {"base_id": base_id, "reference_id": reference_id, "contrast": contrast, "rationale": rationale}
    return f"{preamble}```json\n{json.dumps(body, indent=1)}\n```"


def span(source: str, first: str, last: str | None = None, note: str = "") -> dict:
    """An anchor from the line holding `first` to the next line holding `last` (or to the end of the module)."""
    lines = source.rstrip("\n").splitlines()
    start = next(n for n, line in enumerate(lines, 1) if first in line)
    end = len(lines) if last is None else next(n for n, line in enumerate(lines, 1) if n >= start and last in line)
    return {"start_line": start, "end_line": end, "note": note}


def avenue(title: str, direction: str, citations: list[str]) -> dict:
    """One avenue of the designer's first stage."""
    return {"title": title, "direction": direction, "citations": citations}


def plan(title, avenue_number, rubric, mechanism, low, high, risk, innovation, anchors, citations=()) -> dict:
    """One plan of the designer's second stage."""
    return {
        "title": title,
        "avenue": avenue_number,
        "rubric": rubric,
        "mechanism": mechanism,
        "expected_speedup_min": low,
        "expected_speedup_max": high,
        "risk": risk,
        "innovation": innovation,
        "anchors": anchors,
        "citations": list(citations),
    }


def avenues_answer(avenues: list[dict], lesson: str | None = None) -> str:
    """A first-stage answer (with the lesson of the base/reference contrast when one is given)."""
    body = {"lesson": lesson, "avenues": avenues} if lesson else {"avenues": avenues}
    return f"```json\n{json.dumps(body, indent=1)}\n```"


def plans_answer(plans: list[dict], slots: list[int], avenues: list[dict]) -> str:
    """A second-stage answer on the avenues shown; checks the rule keeps the plans the slots' answers implement.

    Plans name their avenue by its number in AVENUES; the answer numbers it as the iteration listed it.
    """
    titles = [shown["title"] for shown in avenues]
    plans = [p | {"avenue": titles.index(AVENUES[p["avenue"] - 1]["title"]) + 1} for p in plans]
    kept = [pick.index for pick in choose_plans([Plan(**p) for p in plans], len(slots))]
    assert kept == slots, f"the choice rule keeps plans {kept}, the cassette implements {slots}"
    return f"```json\n{json.dumps({'plans': plans}, indent=1)}\n```"


def grounded(base: str, answer: str, chosen: dict, strays: bool = False) -> str:
    """An implementer answer's source, checked against its plan's anchors as the graph will check it."""
    check = check_edit(base, answer, [Anchor(**a) for a in chosen["anchors"]])
    assert check.strays == strays, f"{chosen['title']}: {check.describe()}"
    return answer


def code(source: str, preamble: str) -> str:
    """An implementer or debugger answer: a sentence, then the module in one fence."""
    return f"{preamble}\n\n```python\n{source}```\n"


SEED_SRC, FUSED = kernel("seed"), kernel("fused_rows")
WHOLE_SEED = [span(SEED_SRC, '"""', None, "the whole module: the three kernels become one")]
CITE = ["[1]", "profile"]

AVENUES = [
    avenue(
        "Fuse the passes",
        "The seed moves h and y through DRAM between three kernels; one pass that reads x, residual and gate once "
        "and writes out once cuts the bytes moved, and bytes are what a memory-bound kernel's time follows.",
        CITE,
    ),
    avenue(
        "Cheaper special functions",
        "SiLU's exp lowers to a multiply and an ex2; writing exp2 with the scale folded in saves an instruction "
        "per element. Worth little while memory bound, more once the fused kernel nears the bandwidth roof.",
        ["[2]"],
    ),
    avenue(
        "Launch shape and warp count",
        "Match programs and warps to the row width so registers per thread stay bounded and enough warps hide "
        "memory latency; the profile's occupancy limiter says which way to move.",
        ["[1]", "findings"],
    ),
    avenue(
        "Bound registers for wide rows",
        "Stream very wide rows in tiles over two passes so the register footprint no longer grows with H.",
        ["[2]"],
    ),
    avenue(
        "Cache policy for streamed tensors",
        "The activations are touched once, the weight by every row: evict the first early, keep the second in L2.",
        ["[1]"],
    ),
    avenue(
        "Wider, aligned accesses",
        "128-bit loads and stores halve the memory instructions per byte; rows of a multiple of 8 bf16 allow it.",
        ["[2]"],
    ),
    avenue(
        "Persistent programs",
        "One program per SM looping over rows removes the launch tail of the last wave on a 16k-row grid.",
        ["[1]"],
    ),
    avenue(
        "Fewer launches for small problems",
        "Small shapes are launch bound: a single program, or fewer and larger ones, beats thousands of tiny ones.",
        ["[2]", "findings"],
    ),
    avenue(
        "Precision of intermediates",
        "Keep the statistics in fp32 but round where the reference rounds, so a fused kernel stays within tolerance.",
        ["[1]"],
    ),
    avenue(
        "Overlap loads with the reduction",
        "Issue the gate's load before the row reduction so its latency hides behind the sum of squares.",
        ["[2]"],
    ),
]

FUSE = plan(
    "Fuse residual add, RMSNorm and SiLU gate into one row-wise pass",
    1,
    [
        "Replace the three kernels by one taking x, residual, gate, weight and out.",
        "Each program loads its [ROWS, BLOCK_H] tile of x, residual and gate once; round h to bf16 as the reference.",
        "Compute the fp32 sum of squares in registers, normalise, weight, gate and store out once.",
        "One program for a problem that fits one 16K-element tile; one row per program otherwise.",
    ],
    "About 9 tensor passes through DRAM become 4; the problem is memory bound, so time follows bytes moved.",
    1.8,
    2.6,
    "medium",
    8,
    WHOLE_SEED,
    CITE,
)
FUSE_EXP2 = plan(
    "Fuse the passes and take SiLU through exp2",
    2,
    ["Fuse the three kernels into one row-wise pass.", "Compute sigmoid(g) as 1 / (1 + exp2(-g * log2(e)))."],
    "Fusion cuts the bytes; exp2 with the scale folded in saves a multiply per element.",
    1.0,
    1.3,
    "medium",
    6,
    WHOLE_SEED,
    ["[2]"],
)
BIG_BLOCKS = plan(
    "Larger blocks for the elementwise kernels",
    3,
    ["Keep the seed's three kernels.", "Use 4096-element blocks for the residual add and the SiLU gate."],
    "Fewer, longer programs amortise launch and index arithmetic; each still streams contiguous memory.",
    1.02,
    1.15,
    "low",
    2,
    [span(SEED_SRC, "class ModelNew", None, "the launches in forward")],
)
TILED_SEED = plan(
    "Fuse, streaming each row in 64-wide tiles over two passes",
    4,
    [
        "One fused program per row.",
        "Pass 1 accumulates the sum of squares tile by tile; pass 2 reloads each tile, normalises, gates, stores.",
    ],
    "Fusion cuts the bytes; tiling bounds registers per thread whatever H is, and the second read mostly hits L2.",
    1.5,
    2.9,
    "high",
    6,
    WHOLE_SEED,
    ["[2]"],
)
VECTOR_SEED = plan(
    "128-bit loads in the elementwise kernels",
    6,
    ["Load and store 8 bf16 per thread in the add and gate kernels (BLOCK a multiple of 8, aligned)."],
    "Halves memory instructions per byte; the passes stay, so the gain is capped.",
    1.0,
    1.1,
    "low",
    3,
    [span(SEED_SRC, "def residual_add_kernel", "def rms_norm_row_kernel", "the add kernel")],
)
PERSIST_SEED = plan(
    "Persistent row programs for the norm kernel",
    7,
    ["Launch one program per SM for the norm kernel and loop over rows."],
    "Removes the tail of the last wave; the passes through DRAM remain.",
    0.9,
    1.3,
    "medium",
    5,
    [span(SEED_SRC, "def rms_norm_row_kernel", "def silu_gate_kernel", "the norm kernel")],
)

EXP2 = plan(
    "SiLU through exp2",
    2,
    ["In the fused kernel, compute sigmoid(g) as 1 / (1 + exp2(-g * log2(e)))."],
    "exp lowers to a multiply and an ex2; writing exp2 lets the scale fold into an existing multiply.",
    1.0,
    1.08,
    "low",
    7,
    [span(FUSED, "silu = ", "silu = ", "the SiLU of the gate")],
    ["[2]"],
)
EXP2_RETRY = plan(
    "SiLU through exp2, scaled correctly",
    2,
    [
        "Use exp(-g) = exp2(-g * log2(e)): the scale is log2(e) = 1.4427, and the sign of the argument is kept.",
        "Check the identity on a few values against torch.sigmoid before writing the kernel line.",
    ],
    "Same mechanism as before; the findings show the earlier attempt failed on the scale and sign, not the idea.",
    1.0,
    1.08,
    "medium",
    6,
    [span(FUSED, "silu = ", "silu = ", "the SiLU of the gate")],
    ["findings", "[2]"],
)
TILED = plan(
    "Stream the row in 64-wide tiles over two passes",
    4,
    [
        "One program per row; pass 1 accumulates the sum of squares tile by tile.",
        "Pass 2 reloads each tile, normalises, gates and writes.",
    ],
    "Bounds registers per thread independently of H, raising occupancy for very wide rows.",
    0.9,
    1.2,
    "medium",
    7,
    [span(FUSED, "@triton.jit", None, "the kernel and its launch")],
)
EVICT = plan(
    "Cache hints: stream activations, keep the weight",
    5,
    ["Load x, residual and gate with eviction_policy='evict_first'.", "Load the weight with 'evict_last'."],
    "The activations are touched once; evicting them first keeps the shared weight row resident in L2.",
    1.0,
    1.06,
    "low",
    4,
    [span(FUSED, "x = tl.load", "g = tl.load", "the kernel's loads")],
    ["[1]"],
)
EVICT_BIG = EVICT | {"expected_speedup_max": 1.12}
WARPS = plan(
    "Scale num_warps with the tile",
    3,
    ["Choose num_warps so each thread handles about 16 elements per tensor (4 warps at 1k, 16 at 4k+)."],
    "A fixed 8 warps leaves 4k-wide rows register heavy and 1k rows under-populated.",
    1.0,
    1.1,
    "low",
    5,
    [span(FUSED, "rows = triton", "num_warps=8", "the launch configuration")],
    ["profile"],
)
WARPS_FROM_TILES = WARPS | {
    "from_reference": "c0003's bounded work per thread: size the warps to the tile so each thread holds about 16 "
    "elements per tensor, as its 64-wide tiles do, without its second pass over the row."
}
LESSON_I2 = (
    "c0003 streams each row in 64-wide tiles over two passes: registers per thread stay bounded whatever H is, "
    "but it reads the row twice, and it measured slower than the single-pass c0002. The second pass costs more "
    "than the bounded registers buy on these shapes; what is worth carrying over is the bounded work per thread, "
    "not the two passes."
)
ONE_ROW = plan(
    "One row per program everywhere",
    8,
    ["Drop the single-program path for small problems: always launch one program per row."],
    "More programs in flight hide memory latency better, whatever the problem size.",
    0.95,
    1.12,
    "low",
    3,
    [span(FUSED, "# A problem that fits", "rows = triton", "the program count")],
)
FOUR_WARPS = plan(
    "Four warps per row program",
    3,
    ["Launch the fused kernel with num_warps=4 instead of 8."],
    "Fewer warps per program leave more programs resident per SM when rows are short.",
    0.97,
    1.04,
    "low",
    2,
    [span(FUSED, "num_warps=8", "num_warps=8", "the warp count")],
    ["profile"],
)
FOUR_WARPS_SAFE = FOUR_WARPS | {"expected_speedup_min": 1.01, "expected_speedup_max": 1.05}
VECTOR = plan(
    "128-bit loads of the activations",
    6,
    ["Load x, residual and gate as 8 bf16 per thread with aligned, contiguous offsets."],
    "Halves the memory instructions per byte; the kernel already streams each tensor once.",
    0.98,
    1.1,
    "medium",
    3,
    [span(FUSED, "x = tl.load", "g = tl.load", "the kernel's loads")],
)
PERSIST = plan(
    "Persistent programs over rows",
    7,
    ["Launch one program per SM; each loops over rows with a stride of the grid size."],
    "Removes the last wave's tail on a 16k-row grid.",
    0.9,
    1.1,
    "high",
    5,
    [span(FUSED, "@triton.jit", None, "the kernel and its launch")],
)

EDGES_I2 = [AVENUES[3], AVENUES[7], AVENUES[4]]
SHORT_I2 = [AVENUES[1], AVENUES[2], AVENUES[4]]


RELU_SRC, RELU_FLAT = (HERE.parent.parent / "graph" / "batch_suite" / "relu_matrix.py").read_text(), kernel("relu_flat")
RELU_AVENUES = [
    avenue(
        f"ReLU avenue {n}: " + title,
        "An elementwise op is memory bound: time follows the bytes moved, so every avenue trims traffic or overhead.",
        CITE,
    )
    for n, title in enumerate(
        (
            "one Triton pass",
            "in-place result",
            "larger blocks",
            "vector loads",
            "fewer launches",
            "persistent programs",
            "warp count",
            "cache hints",
            "fused allocation",
            "masked tail",
        ),
        1,
    )
]


def relu_plan(title, avenue_number, rubric, mechanism, low, high, risk, innovation, base) -> dict:
    """A plan on RELU_AVENUES anchored on the whole base module (any ReLU problem of batch_suite has its lines)."""
    whole = [span(base, '"""', None, "the whole module")]
    return plan(title, avenue_number, [rubric], mechanism, low, high, risk, innovation, whole, CITE)


def relu_plans(base: str) -> list[dict]:
    """Five plans on the ReLU avenues; the choice rule keeps the first for the one slot."""
    return [
        relu_plan(
            "ReLU as one Triton pass over the flattened tensor",
            1,
            "Replace torch.relu by a Triton kernel: each program loads 256 contiguous elements, takes max(x, 0), "
            "stores.",
            "An elementwise op is memory bound; one pass that reads and writes each element once is the floor.",
            0.9,
            1.2,
            "low",
            9,
            base,
        ),
        relu_plan(
            "ReLU in place", 2, "Write over the input.", "Saves an allocation per call.", 1.0, 1.05, "high", 2, base
        ),
        relu_plan(
            "Larger blocks for the ReLU kernel",
            3,
            "Use 1024-element blocks: a quarter of the programs, each streaming four times as much.",
            "Fewer programs amortise launch and index arithmetic over more elements.",
            1.0,
            1.15,
            "low",
            5,
            base,
        ),
        relu_plan(
            "Vector loads", 4, "Load 8 elements per thread.", "Fewer instructions.", 1.0, 1.05, "medium", 3, base
        ),
        relu_plan("Four warps", 7, "num_warps=4.", "More resident programs.", 1.0, 1.03, "low", 1, base),
    ]


def relu_plans_answer(plans: list[dict]) -> str:
    """A second-stage answer on RELU_AVENUES; checks the rule keeps the first plan for the one slot."""
    kept = [pick.index for pick in choose_plans([Plan(**p) for p in plans], 1)]
    assert kept == [0], f"the choice rule keeps plans {kept}, the cassette implements [0]"
    return f"```json\n{json.dumps({'plans': plans}, indent=1)}\n```"


def edges_cassette() -> dict:
    """Two iterations of two experiments that take every edge of the graph (3 avenues, 3 plans, 2 kept)."""
    calls = [
        call("i1.selector", selection("c0001", None, "The seed is the only candidate beyond the reference.")),
        call("i1.hypothesizer.avenues", avenues_answer(AVENUES[:3])),
        call("i1.hypothesizer.plans", plans_answer([FUSE, FUSE_EXP2, BIG_BLOCKS], [0, 1], AVENUES[:3])),
        call("i1.s0.implementer.a0", code(draft_with_import_typo(), "Here is the fused single-pass kernel.")),
        call("i1.s0.debugger.a1", code(kernel("fused_rows"), "The import of triton.language was misspelt.")),
        call("i1.s1.implementer.a0", code(kernel("silu_exp2_wrong"), "SiLU now goes through exp2.")),
        call("i1.s1.debugger.a1", code(kernel("silu_exp2_still_wrong"), "exp2 needs its argument rescaled.")),
        # A malformed first answer: the id is not one of those offered; the retry (".r1") is valid.
        call("i2.selector", selection("fused", None, "The fused kernel.", preamble="Picking the fused kernel.\n")),
        call("i2.selector.r1", selection("c0002", None, "c0002, the fused kernel, is the fastest correct version.")),
        call("i2.hypothesizer.avenues", avenues_answer(EDGES_I2)),
        call("i2.hypothesizer.plans", plans_answer([TILED, ONE_ROW, EVICT], [0, 1], EDGES_I2)),
        call("i2.s0.implementer.a0", code(grounded(FUSED, kernel("column_tiled"), TILED), "Tiles of 64 columns.")),
        call("i2.s1.implementer.a0", code(grounded(FUSED, kernel("row_per_program"), ONE_ROW), "One row each.")),
    ]
    return header("Test cassette for tests/graph: every edge of the graph on fused_residual_norm's cpu shapes.", calls)


def short_cassette() -> dict:
    """Two iterations of one experiment each, all correct (3 avenues, 3 plans): budgets, errors, strategies, Studio."""
    calls = [
        call("i1.selector", selection("c0001", None, "The seed is the only candidate beyond the reference.")),
        call("i1.hypothesizer.avenues", avenues_answer(AVENUES[:3])),
        call("i1.hypothesizer.plans", plans_answer([FUSE, FUSE_EXP2, BIG_BLOCKS], [0], AVENUES[:3])),
        call("i1.s0.implementer.a0", code(kernel("fused_rows"), "Here is the fused single-pass kernel.")),
        call("i2.selector", selection("c0002", None, "c0002, the fused kernel, is the fastest correct version.")),
        call("i2.hypothesizer.avenues", avenues_answer(SHORT_I2)),
        call("i2.hypothesizer.plans", plans_answer([EXP2, WARPS, EVICT], [0], SHORT_I2)),
        call("i2.s0.implementer.a0", code(grounded(FUSED, kernel("silu_exp2"), EXP2), "SiLU now goes through exp2.")),
    ]
    return header("Test cassette for tests/graph: short all-correct runs (budgets, errors, strategies, Studio).", calls)


def without_literature_cassette() -> dict:
    """One iteration whose avenues cite only the lab's own evidence: a run whose literature index is broken."""
    own = [a | {"citations": ["profile", "findings"]} for a in AVENUES[:3]]
    calls = [
        call("i1.selector", selection("c0001", None, "The seed is the only candidate beyond the reference.")),
        call("i1.hypothesizer.avenues", avenues_answer(own)),
        call(
            "i1.hypothesizer.plans",
            plans_answer([p | {"citations": []} for p in (FUSE, FUSE_EXP2, BIG_BLOCKS)], [0], own),
        ),
        call("i1.s0.implementer.a0", code(kernel("fused_rows"), "Here is the fused single-pass kernel.")),
    ]
    return header("Test cassette for tests/graph: one iteration with no literature passages to cite.", calls)


def batch_cassette() -> dict:
    """Two iterations of one experiment on each problem of tests/graph/batch_suite (both are ReLU, any shape)."""
    i2 = relu_plans(RELU_FLAT)
    i2 = [i2[2], i2[1], *i2[3:], i2[0] | {"title": "One pass again", "innovation": 1, "expected_speedup_max": 1.01}]
    calls = [
        call("i1.selector", selection("c0000", None, "The reference is the only version so far.")),
        call("i1.hypothesizer.avenues", avenues_answer(RELU_AVENUES)),
        call("i1.hypothesizer.plans", relu_plans_answer(relu_plans(RELU_SRC))),
        call("i1.s0.implementer.a0", code(kernel("relu_flat"), "Here is the Triton ReLU.")),
        call("i2.selector", selection("c0001", None, "c0001, the Triton kernel, is the only custom kernel.")),
        call("i2.hypothesizer.avenues", avenues_answer(RELU_AVENUES)),
        call("i2.hypothesizer.plans", relu_plans_answer(i2)),
        call("i2.s0.implementer.a0", code(kernel("relu_flat_blocks"), "Same kernel, 1024-element blocks.")),
    ]
    return header("Test cassette for tests/graph/test_batch.py: the same answers serve both ReLU problems.", calls)


def demo_cassette() -> dict:
    """The bundled demo: the whole method over 3 iterations of the defaults (10 avenues, 5 plans, 3 kept)."""
    exp2_tries = [kernel(name) for name in ("silu_exp2_wrong", "silu_exp2_still_wrong", "silu_exp2_sign_lost")]
    calls = [
        call(
            "i1.selector",
            selection("c0001", None, "The seed is the only kernel so far; its three kernels are the obvious target."),
        ),
        call("i1.hypothesizer.avenues", avenues_answer(AVENUES)),
        # Listed out of the rule's order: it keeps FUSE (innovation), TILED_SEED (maximum) and BIG_BLOCKS (minimum).
        call(
            "i1.hypothesizer.plans",
            plans_answer([VECTOR_SEED, FUSE, PERSIST_SEED, BIG_BLOCKS, TILED_SEED], [1, 4, 3], AVENUES),
        ),
        call(
            "i1.s0.implementer.a0",
            code(grounded(SEED_SRC, draft_with_import_typo(), FUSE), "Here is the fused single-pass kernel."),
        ),
        call(
            "i1.s0.debugger.a1",
            code(kernel("fused_rows"), "ModuleNotFoundError: the draft misspelt triton.language; fixed the import."),
        ),
        call(
            "i1.s1.implementer.a0",
            code(
                grounded(SEED_SRC, kernel("column_tiled"), TILED_SEED), "One fused program per row, in 64-wide tiles."
            ),
        ),
        call(
            "i1.s2.implementer.a0",
            code(grounded(SEED_SRC, kernel("seed_big_blocks"), BIG_BLOCKS), "Same kernels, larger elementwise blocks."),
        ),
        call(
            "i2.selector",
            selection(
                "c0002",
                "c0003",
                "c0002, the fused single-pass kernel, leads its line; c0003 heads another line (tiled rows) whose "
                "bounded register use is worth contrasting.",
                contrast="lineage",
            ),
        ),
        call("i2.hypothesizer.avenues", avenues_answer(AVENUES[1:] + AVENUES[:1], LESSON_I2)),
        # The rule keeps EXP2 (innovation), ONE_ROW (maximum), then WARPS over EVICT: both promise at least 1.0x,
        # and the tie goes to the higher expected midpoint.
        call(
            "i2.hypothesizer.plans",
            plans_answer([EVICT, EXP2, WARPS_FROM_TILES, ONE_ROW, FOUR_WARPS], [1, 3, 2], AVENUES[1:] + AVENUES[:1]),
        ),
        call("i2.s0.implementer.a0", code(grounded(FUSED, exp2_tries[0], EXP2), "SiLU now goes through exp2.")),
        call(
            "i2.s0.debugger.a1",
            code(grounded(FUSED, exp2_tries[1], EXP2), "exp2 computes 2**x, so the argument needs rescaling."),
        ),
        call(
            "i2.s0.debugger.a2",
            code(
                grounded(FUSED, exp2_tries[2], EXP2),
                "The scale must be log2(e), not ln(2): exp(x) = exp2(x * log2(e)).",
            ),
        ),
        call("i2.s1.implementer.a0", code(grounded(FUSED, kernel("row_per_program"), ONE_ROW), "One row each.")),
        call(
            "i2.s2.implementer.a0", code(grounded(FUSED, kernel("fused_rows_warps"), WARPS), "Warps follow the tile.")
        ),
        call(
            "i3.selector",
            selection(
                "c0002",
                None,
                "c0002 is still the line with the most headroom: the findings show exp2 failed on its scale, not "
                "its idea, and the launch changes moved little; refine c0002 directly.",
            ),
        ),
        call("i3.hypothesizer.avenues", avenues_answer(AVENUES[4:] + AVENUES[:4])),
        call(
            "i3.hypothesizer.plans",
            plans_answer(
                [VECTOR, EXP2_RETRY, FOUR_WARPS_SAFE, PERSIST, EVICT_BIG], [1, 4, 2], AVENUES[4:] + AVENUES[:4]
            ),
        ),
        call("i3.s0.implementer.a0", code(grounded(FUSED, kernel("silu_exp2"), EXP2_RETRY), "exp2, sign kept.")),
        # Strays: it also rewrites the launch's warp count, outside the loads it was anchored to. Sent back.
        call(
            "i3.s1.implementer.a0",
            code(grounded(FUSED, evict_with_stray_warps(), EVICT_BIG, strays=True), "Cache hints, and warps."),
        ),
        call(
            "i3.s1.debugger.a1",
            code(
                grounded(FUSED, kernel("fused_rows_evict"), EVICT_BIG),
                "The warp count was outside the plan's anchors; restored num_warps=8, kept the cache hints.",
            ),
        ),
        call("i3.s2.implementer.a0", code(grounded(FUSED, four_warps(), FOUR_WARPS_SAFE), "num_warps=4.")),
    ]
    note = (
        "Demo of python -m graph.run on fused_residual_norm with the defaults (3 iterations, 10 avenues, 5 plans, "
        "3 kept by the paper's rule, 2 debug rounds): a selector contrast by lineage that the designer learns from "
        "and borrows from, a misspelt import and a wrong exp2 sent to the debugger, an edit outside its plan's "
        "anchors sent back, siblings in every prompt. "
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
    HERE / "without_literature.json": without_literature_cassette,
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
