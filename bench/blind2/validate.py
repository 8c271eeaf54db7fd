"""Checks bench/blind2/families.json against the format the set promises (stdlib only).

Usage: python bench/blind2/validate.py [path]   exit 0 when valid, 1 otherwise.
"""
import json
import os
import re
import sys

EVENT_TYPES = {"user_input", "llm_reasoning", "tool_call", "state_change", "feedback", "recall"}
TASK_TYPES = {"query", "operation", "analysis"}
OUTCOMES = {"success", "failure", "partial"}
KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MIN_FAMILIES = 44
MIN_SAME_TOOL_PAIRS = 12
MAX_JACCARD = 0.8


def tokens(text):
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def jaccard(a, b):
    ta, tb = tokens(a), tokens(b)
    if not ta and not tb:
        return 1.0
    return len(ta & tb) / len(ta | tb)


def check_event(ev, tools, where, errors):
    if not isinstance(ev, dict):
        errors.append(f"{where}: event is not an object")
        return
    if "event_id" in ev:
        errors.append(f"{where}: carries event_id (the runner adds ids)")
    etype, content = ev.get("type"), ev.get("content")
    if etype not in EVENT_TYPES:
        errors.append(f"{where}: unknown event type {etype!r}")
        return
    if not isinstance(content, dict):
        errors.append(f"{where}: content must be an object")
        return

    def text(key):
        if not isinstance(content.get(key), str) or not content[key].strip():
            errors.append(f"{where}: {etype}.content.{key} must be a non-empty string")

    if etype in ("user_input", "llm_reasoning"):
        text("text")
    elif etype == "feedback":
        text("text")
        if content.get("sentiment") not in ("positive", "negative"):
            errors.append(f"{where}: feedback sentiment must be positive|negative")
    elif etype == "state_change":
        text("key")
        if "value" not in content:
            errors.append(f"{where}: state_change needs a value")
    elif etype == "recall":
        text("recall_id")
    elif etype == "tool_call":
        text("tool")
        if content.get("tool") not in tools:
            errors.append(f"{where}: tool {content.get('tool')!r} is not in the family's tools")
        if not isinstance(content.get("params"), dict):
            errors.append(f"{where}: tool_call params must be an object")
        status = content.get("status")
        if status == "error":
            text("error")
        elif status == "ok":
            if "result" not in content:
                errors.append(f"{where}: ok tool_call needs a result")
        else:
            errors.append(f"{where}: tool_call status must be ok|error")
        extra = set(content) - {"tool", "params", "status", "result", "error", "available_tools"}
        if extra:
            errors.append(f"{where}: tool_call content has unknown keys {sorted(extra)}")


def validate(doc, warnings=None):
    errors = []
    warnings = [] if warnings is None else warnings
    if doc.get("version") != 1:
        errors.append("version must be 1")
    fams = doc.get("families")
    if not isinstance(fams, list):
        return ["families must be a list"], {}
    by_id = {}
    for i, fam in enumerate(fams):
        fid = fam.get("id")
        if not isinstance(fid, str) or not KEBAB.match(fid):
            errors.append(f"family #{i}: id {fid!r} is not kebab-case")
        if fid in by_id:
            errors.append(f"family {fid}: duplicate id")
        by_id[fid] = fam

    all_goals = [(f.get("id"), t.get("goal", "")) for f in fams for t in f.get("train", [])]
    seen_queries = {}
    for fam in fams:
        fid = fam.get("id")
        for key in ("domain", "fix"):
            if not isinstance(fam.get(key), str) or not fam[key].strip():
                errors.append(f"{fid}: {key} must be a non-empty string")
        tools = fam.get("tools")
        if not isinstance(tools, list) or not tools or not all(isinstance(t, str) and t for t in tools):
            errors.append(f"{fid}: tools must be a non-empty list of names")
            tools = []
        if fam.get("task_type") not in TASK_TYPES:
            errors.append(f"{fid}: task_type must be one of {sorted(TASK_TYPES)}")
        terms = fam.get("fix_terms")
        if not isinstance(terms, list) or not 1 <= len(terms) <= 3 or not all(
                isinstance(t, str) and t.strip() and t == t.lower() for t in terms):
            errors.append(f"{fid}: fix_terms must be 1-3 non-empty lower-case strings")
            terms = []
        sib = fam.get("sibling")
        if sib is not None:
            if sib == fid:
                errors.append(f"{fid}: is its own sibling")
            elif sib not in by_id:
                errors.append(f"{fid}: sibling {sib!r} does not exist")
            elif by_id[sib].get("sibling") != fid:
                errors.append(f"{fid}: sibling {sib!r} does not point back")
            else:
                # A sibling's fix terms must not name this family's fix, or scoring cannot tell them apart.
                sib_terms = by_id[sib].get("fix_terms") or []
                clash = [t for t in terms if any(t in s or s in t for s in sib_terms)]
                if clash:
                    errors.append(f"{fid}: fix_terms {clash} overlap its sibling's")
                # Allowed (a sibling may try this family's fix as its wrong alternative) but worth seeing.
                sib_text = json.dumps(by_id[sib].get("train") or [], ensure_ascii=False).lower()
                shared = [t for t in terms if t in sib_text]
                if shared:
                    warnings.append(f"{fid}: fix_terms {shared} also occur in {sib}'s trajectories")

        train = fam.get("train")
        if not isinstance(train, list) or not 2 <= len(train) <= 3:
            errors.append(f"{fid}: needs 2 or 3 train trajectories")
            train = []
        goals = set()
        for j, traj in enumerate(train):
            where = f"{fid}/train[{j}]"
            if not isinstance(traj.get("goal"), str) or not traj["goal"].strip():
                errors.append(f"{where}: goal must be a non-empty string")
            goals.add(traj.get("goal"))
            if traj.get("outcome") not in OUTCOMES:
                errors.append(f"{where}: outcome must be one of {sorted(OUTCOMES)}")
            events = traj.get("events")
            if not isinstance(events, list) or not events:
                errors.append(f"{where}: events must be a non-empty list")
                continue
            for k, ev in enumerate(events):
                check_event(ev, tools, f"{where}/events[{k}]", errors)
            if not any(ev.get("type") == "tool_call" for ev in events if isinstance(ev, dict)):
                errors.append(f"{where}: no tool_call event")
        if len(goals) != len(train):
            errors.append(f"{fid}: train goals repeat")

        tests = fam.get("tests")
        if not isinstance(tests, list) or len(tests) != 4:
            errors.append(f"{fid}: needs exactly 4 tests")
            tests = []
        for j, test in enumerate(tests):
            q = test.get("query") if isinstance(test, dict) else None
            where = f"{fid}/tests[{j}]"
            if not isinstance(q, str) or not q.strip():
                errors.append(f"{where}: query must be a non-empty string")
                continue
            if q in seen_queries:
                errors.append(f"{where}: query repeats {seen_queries[q]}")
            seen_queries[q] = where
            for gid, goal in all_goals:
                if q.strip().lower() == goal.strip().lower() or jaccard(q, goal) > MAX_JACCARD:
                    errors.append(f"{where}: near copy (Jaccard {jaccard(q, goal):.2f}) of a train goal of {gid}")
            leaked = [t for t in terms if t in q.lower()]
            if leaked:
                errors.append(f"{where}: query leaks the fix terms {leaked}")

    pairs, same_tool = set(), set()
    for fam in fams:
        sib = fam.get("sibling")
        if sib in by_id and by_id[sib].get("sibling") == fam.get("id"):
            pair = tuple(sorted((fam["id"], sib)))
            pairs.add(pair)
            if set(fam.get("tools") or []) & set(by_id[sib].get("tools") or []):
                same_tool.add(pair)
    if len(fams) < MIN_FAMILIES:
        errors.append(f"only {len(fams)} families (need >= {MIN_FAMILIES})")
    if len(same_tool) < MIN_SAME_TOOL_PAIRS:
        errors.append(f"only {len(same_tool)} sibling pairs share tools (need >= {MIN_SAME_TOOL_PAIRS})")
    stats = {
        "families": len(fams),
        "domains": len({f.get("domain") for f in fams}),
        "sibling_pairs": len(pairs),
        "same_tool_pairs": len(same_tool),
        "cross_tool_pairs": len(pairs - same_tool),
        "train_trajectories": sum(len(f.get("train") or []) for f in fams),
        "test_queries": sum(len(f.get("tests") or []) for f in fams),
        "train_outcomes": {o: sum(1 for f in fams for t in f.get("train") or [] if t.get("outcome") == o)
                           for o in sorted(OUTCOMES)},
    }
    return errors, stats


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "families.json")
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    warnings = []
    errors, stats = validate(doc, warnings)
    for line in warnings:
        print("WARN", line)
    for line in errors:
        print("ERROR", line)
    print(json.dumps(stats, sort_keys=True))
    print("OK" if not errors else f"{len(errors)} error(s)")
    return 0 if not errors else 1


if __name__ == "__main__":
    sys.exit(main())
