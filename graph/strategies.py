"""How a strategy picks the base without the selector, and what sampling implements.

- `scientist`: the selector (LLM) picks; not here.
- `sampling`: best-of-N. Every slot of every iteration implements `SAMPLE_PLAN` from the starting kernel (the
  seed, else the reference), with the same implementer, debugger and budget as the scientist; no selector, no
  designer, no findings in its prompts. What it measures is what plain resampling buys.
- `tree`: STARK's adaptive epsilon-greedy search over the lineage tree. With probability epsilon it explores a
  candidate other than the best, favouring those with the fewest children; otherwise it exploits the best.
  Epsilon starts at `RunContext.tree_epsilon` and grows with every iteration the best has not improved
  (epsilon * (1 + stalled iterations), at most `EPSILON_MAX`). The draw is seeded by run and iteration, so a
  resumed run makes the same choices. The designer then works on the chosen base as in the scientist.
"""

from __future__ import annotations

import random

from agents.notebook import selectable_ids
from agents.population import ranked
from agents.schemas import Plan, Selection
from kernels.archive import Archive, CandidateRecord

EPSILON_MAX = 0.8
SAMPLE_PLAN = Plan(
    title="Best-of-N sample: the fastest correct kernel you can write",
    rubric=["Write the fastest correct kernel for this problem you can, by any approach, starting from the base."],
    mechanism="An independent sample of the sampling baseline: no selection, no design, no findings.",
    expected_speedup_min=1.0,
    expected_speedup_max=2.0,
    risk="medium",
    innovation=1,
)


def starting_point(archive: Archive) -> CandidateRecord:
    """The kernel every sample starts from: the bundled seed when it is correct, else the PyTorch reference."""
    seeds = [record for record in archive.records if record.status == "seed"]
    return seeds[0] if seeds else archive.records[0]


def sampling_selection(archive: Archive) -> Selection:
    """Sampling's fixed base."""
    start = starting_point(archive)
    return Selection(base_id=start.id, rationale=f"sampling: every sample starts from {start.id} ({start.status})")


def tree_selection(archive: Archive, iteration: int, epsilon: float, seed: str) -> Selection:
    """The epsilon-greedy pick for `iteration`: explore a little-expanded candidate, or exploit the best."""
    nodes = [archive.get(candidate_id) for candidate_id in selectable_ids(archive)]
    kernels = [node for node in nodes if node.status != "reference"]
    nodes = kernels or nodes
    offered = {node.id for node in nodes}
    best = next((record for record in ranked(archive) if record.id in offered), nodes[0])
    stalled = max(0, iteration - 1 - best.iteration)
    rate = min(EPSILON_MAX, epsilon * (1 + stalled))
    rng = random.Random(f"{seed}:{iteration}")
    draw = rng.random()
    others = [node for node in nodes if node.id != best.id]
    if draw >= rate or not others:
        why = f"exploit the best {best.id} (draw {draw:.2f} >= epsilon {rate:.2f}, best stalled {stalled} iterations)"
        return Selection(base_id=best.id, rationale=f"tree: {why}")
    children = {node.id: sum(1 for r in archive.records if r.parent_id == node.id) for node in others}
    pick = rng.choices(others, weights=[1 / (1 + children[node.id]) for node in others])[0]
    why = (
        f"explore {pick.id} ({children[pick.id]} children so far; draw {draw:.2f} < epsilon {rate:.2f}, "
        f"best {best.id} stalled {stalled} iterations)"
    )
    return Selection(base_id=pick.id, rationale=f"tree: {why}")
