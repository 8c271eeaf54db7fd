"""Helpers for testing agents that use hindsight without a network: a local OpenAI-compatible stub."""
from .stub_openai import Policy, Reply, Scripted, StubOpenAI, completion, say, tool_call

__all__ = ["Policy", "Reply", "Scripted", "StubOpenAI", "completion", "say", "tool_call"]
