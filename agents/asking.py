"""Ask a model for an answer of a given shape; say what was wrong with a malformed, empty or cut-off one, ask again."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from string import Template
from typing import TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import ValidationError

from agents.accounting import LLMCall
from agents.errors import CutOff, MalformedAnswer
from agents.replies import cut_by_length, stop_reason
from agents.retry import RetryPolicy, invoke_with_retries

PROMPTS_DIR = Path(__file__).parent / "prompts"
MAX_ANSWER_ATTEMPTS = 3
Answer = TypeVar("Answer")


def render_prompt(role: str, **values: object) -> str:
    """The role's prompt file (`agents/prompts/<role>.md`) with `$name` placeholders filled."""
    return Template((PROMPTS_DIR / f"{role}.md").read_text()).substitute(values)


def _describe(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'answer'}: {e['msg']}" for e in error.errors()[:5])
    return str(error)


def _read(answer: AIMessage, text: str, parse: Callable[[str], Answer]) -> Answer:
    """The parsed answer; an empty reply or one the output-token limit stopped is never parsed."""
    if cut_by_length(answer):
        raise CutOff(f"the output-token limit stopped it (stop reason {stop_reason(answer)})")
    if not text.strip():
        raise MalformedAnswer("the reply was empty")
    return parse(text)


def ask_until_valid(
    model: BaseChatModel,
    prompt: str,
    parse: Callable[[str], Answer],
    *,
    role: str,
    call_id: str,
    max_attempts: int = MAX_ANSWER_ATTEMPTS,
    policy: RetryPolicy | None = None,
) -> tuple[Answer, LLMCall]:
    """Parse the answer; on failure show the model its error and ask again, up to `max_attempts` answers.

    Follow-ups get call ids f"{call_id}.r{n}", so cassettes hold each one; raises `MalformedAnswer` carrying
    the accumulated `LLMCall` as `.call` when the last answer is still unusable.
    """
    messages: list[BaseMessage] = [HumanMessage(prompt)]
    total: LLMCall | None = None
    for attempt in range(max_attempts):
        attempt_id = call_id if attempt == 0 else f"{call_id}.r{attempt}"
        answer, call = invoke_with_retries(model, messages, role=role, call_id=attempt_id, policy=policy)
        total = call.model_copy(update={"call_id": call_id}) if total is None else total.plus(call)
        text = str(answer.text)
        try:
            return _read(answer, text, parse), total
        except CutOff as error:
            problem = str(error)
            again = (
                f"Your reply was cut off before it ended ({problem}), so none of it was used. Reply again with the "
                "complete answer, shorter: no prose around it."
            )
        except (MalformedAnswer, ValidationError, ValueError) as error:
            problem = _describe(error)
            again = f"Your answer could not be used: {problem}\nReply again with the complete answer, fixed."
        messages += [AIMessage(text), HumanMessage(again)]
    failure = MalformedAnswer(f"{role} answer still unusable after {max_attempts} attempts: {problem}")
    failure.call = total.model_copy(update={"error": problem})
    raise failure
