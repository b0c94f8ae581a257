"""The two ways an LLM call ends a role: a fatal error (stop the run) or an answer that stays unusable."""


class FatalLLMError(RuntimeError):
    """Authentication, bad request, a cassette miss, or retries spent: ends the run with this one-line message."""


class MalformedAnswer(ValueError):
    """The model's answer was still unparsable or invalid after the allowed retries."""
