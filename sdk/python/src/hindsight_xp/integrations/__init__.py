"""Integrations with agent frameworks, each an optional extra of the SDK:

* ``hindsight_xp.integrations.openai_agents`` (``pip install "./sdk/python[openai-agents]"``):
  ``HindsightRunHooks`` for the OpenAI Agents SDK.
* ``hindsight_xp.integrations.langchain`` (``pip install "./sdk/python[langchain]"``):
  ``HindsightCallbackHandler`` for LangChain (and LangGraph, which runs on its callbacks).

Each records the run as a trajectory through a ``TrajectoryRecorder``, asks ``advise`` before each
tool call, and puts what hindsight knows into the model's prompt.
"""
