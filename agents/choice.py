"""The paper's rule for which plans to run: the most innovative, the highest maximum uplift, the highest minimum.

Each pick is a different plan. Ties, and any picks past the third, go by `TIE_RULE`: the highest expected
midpoint ((min + max) / 2), then the lower risk, then the plan listed first. Fewer than three picks take the
rule's parts in order.
"""

from __future__ import annotations

from collections.abc import Callable

from agents.schemas import ChosenPlan, Plan

TIE_RULE = "ties and picks past the third: highest expected midpoint (min+max)/2, then lower risk, then listed first"
RISK_RANK = {"low": 0, "medium": 1, "high": 2}


def _midpoint(plan: Plan) -> float:
    return (plan.expected_speedup_min + plan.expected_speedup_max) / 2


def _tie(index: int, plan: Plan) -> tuple:
    # Sorted descending, so lower risk and earlier index are negated to win.
    return (_midpoint(plan), -RISK_RANK[plan.risk], -index)


RULE: list[tuple[Callable[[Plan], float], Callable[[Plan], str]]] = [
    (lambda p: p.innovation, lambda p: f"most innovative (innovation {p.innovation}/10)"),
    (lambda p: p.expected_speedup_max, lambda p: f"highest maximum uplift ({p.expected_speedup_max:g}x)"),
    (lambda p: p.expected_speedup_min, lambda p: f"highest minimum uplift ({p.expected_speedup_min:g}x)"),
]
RULE_TEXT = "first the most innovative, then the highest maximum uplift, then the highest minimum uplift"
FILL = (_midpoint, lambda p: f"fill: highest expected midpoint ({_midpoint(p):.3g}x)")


def choose_plans(plans: list[Plan], n: int) -> list[ChosenPlan]:
    """Up to `n` distinct plans by the rule, in the order picked, each with the part of the rule that kept it."""
    left = dict(enumerate(plans))
    chosen: list[ChosenPlan] = []
    for step in range(min(n, len(plans))):
        key, reason = RULE[step] if step < len(RULE) else FILL
        index = max(left, key=lambda i: (key(left[i]), *_tie(i, left[i])))
        chosen.append(ChosenPlan(index=index, reason=reason(left.pop(index))))
    return chosen
