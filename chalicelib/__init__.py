"""hindsight: experience memory for LLM agents.

Layers (dependencies point inward): ``domain`` (pure logic, no SDKs) <- ``ports``
(typed interfaces) <- ``services`` (use cases) <- ``adapters`` (SQLite, numpy, ONNX, ...)
and entrypoints (``app.py``; the embedded server in ``local/`` beside it, outside the Lambda package), wired in ``chalicelib.container``.
"""
