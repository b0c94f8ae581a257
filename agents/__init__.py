"""The four LLM roles (selector, hypothesizer, implementer, debugger), their prompts, schemas and models."""
