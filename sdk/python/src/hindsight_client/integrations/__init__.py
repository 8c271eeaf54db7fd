"""Integrations with agent frameworks, each an optional extra of the SDK:

* ``hindsight_client.integrations.openai_agents`` (``pip install "hindsight-client[openai-agents]"``):
  ``HindsightRunHooks`` for the OpenAI Agents SDK.
* ``hindsight_client.integrations.langchain`` (``pip install "hindsight-client[langchain]"``):
  ``HindsightCallbackHandler`` for LangChain (and LangGraph, which runs on its callbacks).

Each records the run as a trajectory through a ``TrajectoryRecorder``, asks ``advise`` before each
tool call, and puts what hindsight knows into the model's prompt.
"""
