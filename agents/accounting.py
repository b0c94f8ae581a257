"""Token and cost accounting per LLM call, from the answer's `usage_metadata`.

- `LLMCall(role, call_id, model, input_tokens, output_tokens, cost_usd, attempts, seconds, fell_back, error)`.
- `PRICES`: USD per 1M input / output tokens by model name; `cost_of(model, usage) -> float`.
- `totals_by_role(calls)`: tokens, dollars and calls summed per role, for budgets and the run report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pydantic import BaseModel


@dataclass(frozen=True)
class Price:
    """USD per 1M tokens; some models charge more once the prompt passes `long_context_above` tokens."""

    input: float
    output: float
    long_context_above: int | None = None
    input_long: float | None = None
    output_long: float | None = None


# Paid-tier list prices, text tokens, checked 2026-03. Gemini counts thinking tokens as output tokens and
# langchain-google-genai already folds them into `output_tokens`.
# Gemini: https://ai.google.dev/gemini-api/docs/pricing
# OpenAI: https://openai.com/api/pricing/   Anthropic: https://www.anthropic.com/pricing#api
PRICES: dict[str, Price] = {
    "gemini-2.5-pro": Price(1.25, 10.00, long_context_above=200_000, input_long=2.50, output_long=15.00),
    "gemini-2.5-flash": Price(0.30, 2.50),
    "gemini-2.5-flash-lite": Price(0.10, 0.40),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4o": Price(2.50, 10.00),
    "claude-sonnet-4-5": Price(3.00, 15.00),
    "claude-opus-4-1": Price(15.00, 75.00),
}


def model_name(model: str) -> str:
    """The bare model name of a spec or SDK name: "google_genai:gemini-2.5-pro" and "models/..." -> "gemini-2.5-pro"."""
    return model.split(":", 1)[-1].removeprefix("models/")


def cost_of(model: str, usage: Mapping | None) -> float:
    """Dollar cost of one call; 0.0 for a model missing from `PRICES` (local, fake, or not yet priced)."""
    price = PRICES.get(model_name(model))
    if price is None or not usage:
        return 0.0
    input_tokens = usage.get("input_tokens", 0) or 0
    output_tokens = usage.get("output_tokens", 0) or 0
    per_input, per_output = price.input, price.output
    if price.long_context_above is not None and input_tokens > price.long_context_above:
        per_input, per_output = price.input_long, price.output_long
    return (input_tokens * per_input + output_tokens * per_output) / 1_000_000


class LLMCall(BaseModel):
    """What one role's call to a model took: tokens, dollars, attempts, time, and how it ended."""

    role: str
    call_id: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    attempts: int = 1
    seconds: float = 0.0
    fell_back: bool = False
    error: str | None = None

    def plus(self, other: LLMCall) -> LLMCall:
        """One role call made of this call and a follow-up (a retry with feedback)."""
        return self.model_copy(
            update={
                "input_tokens": self.input_tokens + other.input_tokens,
                "output_tokens": self.output_tokens + other.output_tokens,
                "cost_usd": self.cost_usd + other.cost_usd,
                "attempts": self.attempts + other.attempts,
                "seconds": self.seconds + other.seconds,
            }
        )


def totals_by_role(calls: Iterable[LLMCall]) -> dict[str, dict[str, float]]:
    """Per role: calls, attempts, input and output tokens, dollars and seconds, summed."""
    totals: dict[str, dict[str, float]] = {}
    for call in calls:
        row = totals.setdefault(
            call.role,
            {"calls": 0, "attempts": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "seconds": 0.0},
        )
        row["calls"] += 1
        row["attempts"] += call.attempts
        row["input_tokens"] += call.input_tokens
        row["output_tokens"] += call.output_tokens
        row["cost_usd"] += call.cost_usd
        row["seconds"] += call.seconds
    return totals
