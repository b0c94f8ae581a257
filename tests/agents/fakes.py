"""Scripted chat models for the agents tests."""

from langchain_core.language_models import BaseChatModel, FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

USAGE = {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}


class PricedFake(FakeMessagesListChatModel):
    """langchain-core's scripted fake, with a model name for accounting to price."""

    model: str = "gemini-2.5-pro"


def scripted(*answers: str) -> PricedFake:
    """A model that answers with these texts in order, each with USAGE."""
    return PricedFake(responses=[AIMessage(text, usage_metadata=USAGE) for text in answers])


class Flaky(BaseChatModel):
    """Raises the scripted errors first, then answers; records the call ids and prompts it saw."""

    outcomes: list
    seen: list = []

    @property
    def _llm_type(self) -> str:
        return "flaky"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.seen.append((run_manager.metadata.get("ks_call_id"), messages))
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return ChatResult(generations=[ChatGeneration(message=AIMessage(outcome, usage_metadata=USAGE))])
