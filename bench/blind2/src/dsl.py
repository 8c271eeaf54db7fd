"""Tiny helpers so the hand-written families read like agent logs (stdlib only)."""


def U(text):
    return {"type": "user_input", "content": {"text": text}}


def R(text):
    return {"type": "llm_reasoning", "content": {"text": text}}


def E(tool, params, error):
    return {"type": "tool_call", "content": {"tool": tool, "params": params, "status": "error", "error": error}}


def OK(tool, params, result):
    return {"type": "tool_call", "content": {"tool": tool, "params": params, "status": "ok", "result": result}}


def FB(text, sentiment="positive"):
    return {"type": "feedback", "content": {"text": text, "sentiment": sentiment}}


def S(key, value):
    return {"type": "state_change", "content": {"key": key, "value": value}}


def T(goal, outcome, *events):
    return {"goal": goal, "outcome": outcome, "events": list(events)}


def F(id, domain, tools, sibling, task_type, fix, fix_terms, train, tests):
    return {
        "id": id, "domain": domain, "tools": tools, "sibling": sibling, "task_type": task_type,
        "fix": fix, "fix_terms": fix_terms, "train": train, "tests": [{"query": q} for q in tests],
    }
