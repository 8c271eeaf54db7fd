"""Learning from runs of tools that are real code: an environment's own tools, data, policy and
tasks with gold actions, replayed as successes and as realistic mistakes, recorded through the
public HTTP API, and measured on held-out tasks beside raw retrieval (``python -m bench.realruns``)."""
