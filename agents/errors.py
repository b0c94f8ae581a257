"""The ways an LLM call ends a role: a fatal error (stop the run), an unusable answer, or one cut off."""


class FatalLLMError(RuntimeError):
    """Authentication, bad request, a cassette miss, or retries spent: ends the run with this one-line message."""


class MalformedAnswer(ValueError):
    """The model's answer was still unparsable or invalid after the allowed retries."""


class CutOff(MalformedAnswer):
    """The reply ended before its answer did (no closing fence, code that does not parse, an output-token limit)."""
