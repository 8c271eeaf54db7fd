"""The frozen evaluation sets: where each file is, its role, and the one validator of every set file.

    .venv/bin/python -m bench.sets [NAME|PATH ...]   counts, warnings and errors; exit 1 on an error

Two formats. A **blind set** (``bench/blind2``, ``blind3``, ``blind4``, ``independent``) is a
``families.json``: ``{"version": 1, "families": [...]}``, each family with ``id``, ``domain``,
``tools``, ``sibling``, ``task_type``, ``fix``, ``fix_terms``, ``train`` (trajectories: ``goal``,
``outcome``, ``events`` in the HTTP contract's shape without ``event_id``) and ``tests``
(``{"query"}``). Beside it, a set may keep ``shapes.json``: each training trajectory's shapes
(``{"version": 1, "shapes": {name: meaning}, "trajectories": {family: [[name, ...], ...]}}``), which
nothing but the counts reads. The **held-out tasks** of experience_reuse
(``bench/experience_reuse/heldout.json``) are ``{"version": 1, "tasks": {family: [{"query",
"values"}]}}``: new wordings and literal values for the templates of ``dataset.py``.

Two levels of checks. ``schema_errors`` is what any file in the blind format must satisfy to be
run (``bench.eval`` loads every file through it, a user's own included). ``set_errors`` adds what
the frozen sets promise: kebab-case ids, symmetric siblings whose fix terms differ, 2-3 training
trajectories and 4 tests a family, no test query repeating or nearly copying a training goal (token
Jaccard > 0.8) or containing its own fix terms, at least 44 families and 12 same-tool sibling pairs.
It warns, without failing, where a family's fix term occurs in its sibling's trajectories: a sibling
may try that fix as its wrong alternative on purpose.

The **corrections** set (``bench/corrections/corrections.json``) is ``{"cases": [...]}``, each case
an ``id``, an ``agent_id``, an ``original`` and an ``amendment`` lesson (``situation``, ``advice``)
and a ``query``; ``lookalikes`` (optional) are pairs of lessons (``first``, ``second``) about alike
situations that need different advice, which must not be taken for corrections;
``bench.eval.corrections`` loads it through ``corrections_errors``.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

BENCH = Path(__file__).resolve().parent

EVENT_TYPES = {"user_input", "llm_reasoning", "tool_call", "state_change", "feedback", "recall"}
TASK_TYPES = {"query", "operation", "analysis"}
OUTCOMES = {"success", "failure", "partial"}
TOOL_CALL_KEYS = {"tool", "params", "status", "result", "error", "available_tools"}
KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MIN_FAMILIES = 44
MIN_SAME_TOOL_PAIRS = 12
MAX_JACCARD = 0.8


@dataclass(frozen=True)
class EvalSet:
    name: str
    path: Path
    role: str  # dev: changes are decided on it; held-out: report only, never tuned on
    format: str  # blind | heldout-tasks | corrections


SETS = {s.name: s for s in (
    EvalSet("blind2", BENCH / "blind2" / "families.json", "dev", "blind"),
    EvalSet("blind3", BENCH / "blind3" / "families.json", "dev", "blind"),
    EvalSet("blind4", BENCH / "blind4" / "families.json", "dev", "blind"),
    EvalSet("independent", BENCH / "independent" / "families.json", "held-out", "blind"),
    EvalSet("reuse-heldout", BENCH / "experience_reuse" / "heldout.json", "held-out", "heldout-tasks"),
    EvalSet("corrections", BENCH / "corrections" / "corrections.json", "dev", "corrections"),
)}
BLIND_SETS = {s.name: s.role for s in SETS.values() if s.format == "blind"}  # sets in the blind format, and their role


def read(path: str | Path) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


# --- the blind format ---------------------------------------------------------------------------------

def tokens(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def jaccard(a: str, b: str) -> float:
    ta, tb = tokens(a), tokens(b)
    if not ta and not tb:
        return 1.0
    return len(ta & tb) / len(ta | tb)


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def event_errors(ev: Any, tools: Sequence[str], where: str) -> list[str]:
    """One event of a training trajectory, in the HTTP contract's shape (without ``event_id``)."""
    if not isinstance(ev, dict):
        return [f"{where}: event is not an object"]
    errors = []
    if "event_id" in ev:
        errors.append(f"{where}: carries event_id (the runner adds ids)")
    etype, content = ev.get("type"), ev.get("content")
    if etype not in EVENT_TYPES:
        return [*errors, f"{where}: unknown event type {etype!r}"]
    if not isinstance(content, dict):
        return [*errors, f"{where}: content must be an object"]

    def text(key: str) -> None:
        if not _text(content.get(key)):
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
        extra = set(content) - TOOL_CALL_KEYS
        if extra:
            errors.append(f"{where}: tool_call content has unknown keys {sorted(extra)}")
    return errors


def schema_errors(doc: Any) -> list[str]:
    """What a file in the blind format must hold to be run: the shape of every family, trajectory,
    event and test, unique ids without dots (ids are parsed back from trajectory ids), siblings that
    are families of the file."""
    if not isinstance(doc, dict) or doc.get("version") != 1 or not isinstance(doc.get("families"), list):
        return ["expected {'version': 1, 'families': [...]}"]
    fams = doc["families"]
    errors: list[str] = []
    ids: set[str] = set()
    for n, fam in enumerate(fams):
        if not isinstance(fam, dict):
            errors.append(f"family #{n}: not an object")
            continue
        fid = fam.get("id")
        if not _text(fid) or "." in fid:
            errors.append(f"family #{n}: id {fid!r} must be a non-empty string without a dot")
        elif fid in ids:
            errors.append(f"family {fid}: duplicate id")
        else:
            ids.add(fid)
    for n, fam in enumerate(fams):
        if not isinstance(fam, dict):
            continue
        fid = fam.get("id", f"#{n}")
        for key in ("domain", "fix"):
            if key in fam and not isinstance(fam[key], str):
                errors.append(f"{fid}: {key} must be a string")
        tools = fam.get("tools")
        if not isinstance(tools, list) or not tools or not all(_text(t) for t in tools):
            errors.append(f"{fid}: tools must be a non-empty list of names")
            tools = []
        if fam.get("task_type") is not None and fam["task_type"] not in TASK_TYPES:
            errors.append(f"{fid}: task_type must be one of {sorted(TASK_TYPES)}")
        terms = fam.get("fix_terms", [])
        if not isinstance(terms, list) or not all(_text(t) for t in terms):
            errors.append(f"{fid}: fix_terms must be a list of non-empty strings")
        sib = fam.get("sibling")
        if sib is not None and (sib == fid or sib not in ids):
            errors.append(f"{fid}: sibling {sib!r} is not another family of the file")
        train = fam.get("train")
        if not isinstance(train, list) or not train:
            errors.append(f"{fid}: train must be a non-empty list of trajectories")
            train = []
        for j, traj in enumerate(train):
            where = f"{fid}/train[{j}]"
            if not isinstance(traj, dict):
                errors.append(f"{where}: not an object")
                continue
            if not _text(traj.get("goal")):
                errors.append(f"{where}: goal must be a non-empty string")
            if traj.get("outcome", "success") not in OUTCOMES:
                errors.append(f"{where}: outcome must be one of {sorted(OUTCOMES)}")
            events = traj.get("events", [])
            if not isinstance(events, list):
                errors.append(f"{where}: events must be a list")
                continue
            for k, ev in enumerate(events):
                errors += event_errors(ev, tools, f"{where}/events[{k}]")
        tests = fam.get("tests")
        if not isinstance(tests, list) or not tests:
            errors.append(f"{fid}: tests must be a non-empty list")
            tests = []
        for j, test in enumerate(tests):
            if not isinstance(test, dict) or not _text(test.get("query")):
                errors.append(f"{fid}/tests[{j}]: query must be a non-empty string")
    return errors


def set_errors(doc: Any, warnings: list[str] | None = None) -> list[str]:
    """``schema_errors``, then what the frozen sets promise (this module's docstring)."""
    errors = schema_errors(doc)
    if errors:
        return errors
    warnings = [] if warnings is None else warnings
    fams = doc["families"]
    by_id = {f["id"]: f for f in fams}
    all_goals = [(f["id"], t["goal"]) for f in fams for t in f["train"]]
    seen_queries: dict[str, str] = {}
    for fam in fams:
        fid = fam["id"]
        if not KEBAB.match(fid):
            errors.append(f"{fid}: id is not kebab-case")
        for key in ("domain", "fix"):
            if not _text(fam.get(key)):
                errors.append(f"{fid}: {key} must be a non-empty string")
        if fam.get("task_type") not in TASK_TYPES:
            errors.append(f"{fid}: task_type must be one of {sorted(TASK_TYPES)}")
        terms = fam.get("fix_terms") or []
        if not 1 <= len(terms) <= 3 or any(t != t.lower() for t in terms):
            errors.append(f"{fid}: fix_terms must be 1-3 lower-case strings")
        sib = fam.get("sibling")
        if sib is not None:
            if by_id[sib].get("sibling") != fid:
                errors.append(f"{fid}: sibling {sib!r} does not point back")
            else:
                # a sibling's fix terms must not name this family's fix, or scoring cannot tell them apart
                sib_terms = by_id[sib].get("fix_terms") or []
                clash = [t for t in terms if any(t in s or s in t for s in sib_terms)]
                if clash:
                    errors.append(f"{fid}: fix_terms {clash} overlap its sibling's")
                sib_text = json.dumps(by_id[sib]["train"], ensure_ascii=False).lower()
                shared = [t for t in terms if t in sib_text]
                if shared:
                    warnings.append(f"{fid}: fix_terms {shared} also occur in {sib}'s trajectories")
        train = fam["train"]
        if not 2 <= len(train) <= 3:
            errors.append(f"{fid}: needs 2 or 3 train trajectories")
        if any("outcome" not in t for t in train):
            errors.append(f"{fid}: every train trajectory needs an outcome")
        if len({t["goal"] for t in train}) != len(train):
            errors.append(f"{fid}: train goals repeat")
        for j, traj in enumerate(train):
            if not any(ev.get("type") == "tool_call" for ev in traj.get("events", [])):
                errors.append(f"{fid}/train[{j}]: no tool_call event")
        if len(fam["tests"]) != 4:
            errors.append(f"{fid}: needs exactly 4 tests")
        for j, test in enumerate(fam["tests"]):
            q, where = test["query"], f"{fid}/tests[{j}]"
            if q in seen_queries:
                errors.append(f"{where}: query repeats {seen_queries[q]}")
            seen_queries[q] = where
            for gid, goal in all_goals:
                if q.strip().lower() == goal.strip().lower() or jaccard(q, goal) > MAX_JACCARD:
                    errors.append(f"{where}: near copy (Jaccard {jaccard(q, goal):.2f}) of a train goal of {gid}")
            leaked = [t for t in terms if t in q.lower()]
            if leaked:
                errors.append(f"{where}: query leaks the fix terms {leaked}")
    pairs, same_tool = sibling_pairs(fams)
    if len(fams) < MIN_FAMILIES:
        errors.append(f"only {len(fams)} families (need >= {MIN_FAMILIES})")
    if len(same_tool) < MIN_SAME_TOOL_PAIRS:
        errors.append(f"only {len(same_tool)} sibling pairs share tools (need >= {MIN_SAME_TOOL_PAIRS})")
    return errors


def sibling_pairs(fams: Sequence[dict[str, Any]]) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """(every symmetric sibling pair, the pairs whose families share a tool)."""
    by_id = {f["id"]: f for f in fams}
    pairs, same_tool = set(), set()
    for fam in fams:
        sib = fam.get("sibling")
        if sib in by_id and by_id[sib].get("sibling") == fam["id"]:
            pair = tuple(sorted((fam["id"], sib)))
            pairs.add(pair)
            if set(fam["tools"]) & set(by_id[sib]["tools"]):
                same_tool.add(pair)
    return pairs, same_tool


def shapes_errors(shapes: Any, doc: dict[str, Any]) -> list[str]:
    """``shapes.json`` names one or more known shapes for every training trajectory of the set."""
    if not isinstance(shapes, dict) or shapes.get("version") != 1 or not isinstance(shapes.get("shapes"), dict) \
            or not isinstance(shapes.get("trajectories"), dict):
        return ["shapes.json: expected {'version': 1, 'shapes': {...}, 'trajectories': {...}}"]
    errors = []
    known, given = shapes["shapes"], shapes["trajectories"]
    fams = {f["id"]: f for f in doc["families"]}
    if set(given) != set(fams):
        errors.append(f"shapes.json: families differ from the set's ({sorted(set(given) ^ set(fams))[:5]})")
    for fid, per_traj in given.items():
        if fid in fams and (not isinstance(per_traj, list) or len(per_traj) != len(fams[fid]["train"])):
            errors.append(f"shapes.json: {fid} needs one list of shapes per training trajectory")
            continue
        for names in per_traj:
            if not isinstance(names, list) or not names or any(n not in known for n in names):
                errors.append(f"shapes.json: {fid} has an unknown or empty shape list {names!r}")
    return errors


def stats(doc: dict[str, Any], shapes: dict[str, Any] | None = None) -> dict[str, Any]:
    fams = doc["families"]
    pairs, same_tool = sibling_pairs(fams)
    trajs = [{"events": [], **t} for f in fams for t in f["train"]]
    out = {
        "families": len(fams),
        "domains": len({f.get("domain") for f in fams}),
        "sibling_pairs": len(pairs),
        "same_tool_pairs": len(same_tool),
        "cross_tool_pairs": len(pairs - same_tool),
        "train_trajectories": len(trajs),
        "events": sum(len(t["events"]) for t in trajs),
        "event_types": dict(sorted(Counter(e["type"] for t in trajs for e in t["events"]).items())),
        "task_types": dict(sorted(Counter(str(f.get("task_type")) for f in fams).items())),
        "test_queries": sum(len(f["tests"]) for f in fams),
        "train_outcomes": {o: sum(1 for t in trajs if t.get("outcome") == o) for o in sorted(OUTCOMES)},
    }
    if shapes is not None:
        out["shapes"] = dict(sorted(Counter(n for per in shapes["trajectories"].values() for names in per
                                            for n in names).items()))
    return out


# --- experience_reuse's held-out tasks ----------------------------------------------------------------

def heldout_errors(doc: Any) -> list[str]:
    """``{"version": 1, "tasks": {family: [{"query": str, "values": {name: value}}, ...]}}``; which
    families and value names a task needs is checked against ``dataset.py`` by its tests."""
    if not isinstance(doc, dict) or doc.get("version") != 1 or not isinstance(doc.get("tasks"), dict):
        return ["expected {'version': 1, 'tasks': {family: [...]}}"]
    errors = []
    for fid, tasks in doc["tasks"].items():
        if not isinstance(tasks, list) or not tasks:
            errors.append(f"{fid}: tasks must be a non-empty list")
            continue
        for j, task in enumerate(tasks):
            where = f"{fid}/tasks[{j}]"
            if not isinstance(task, dict) or set(task) != {"query", "values"}:
                errors.append(f"{where}: must be an object with query and values only")
                continue
            if not _text(task["query"]):
                errors.append(f"{where}: query must be a non-empty string")
            values = task["values"]
            if not isinstance(values, dict) or not values or not all(_text(k) for k in values):
                errors.append(f"{where}: values must be a non-empty object of named literals")
    return errors


# --- the corrections set ------------------------------------------------------------------------------

CASE_KEYS = {"id", "agent_id", "original", "amendment", "query"}
LESSON_KEYS = {"situation", "advice"}
LOOKALIKE_KEYS = {"id", "agent_id", "first", "second"}


def corrections_errors(doc: Any) -> list[str]:
    """Every case has exactly its keys, both lessons a situation and advice, ids unique."""
    if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list) or not doc["cases"]:
        return ["expected {'cases': [...]}"]
    errors, seen = [], set()
    for n, case in enumerate(doc["cases"]):
        if not isinstance(case, dict) or set(case) != CASE_KEYS or any(
                not isinstance(case[k], dict) or set(case[k]) != LESSON_KEYS for k in ("original", "amendment")):
            name = case.get("id") if isinstance(case, dict) else f"#{n}"
            errors.append(f"corrections case {name!r}: expected keys {sorted(CASE_KEYS)}, each lesson {sorted(LESSON_KEYS)}")
            continue
        texts = [case["id"], case["agent_id"], case["query"], *case["original"].values(), *case["amendment"].values()]
        if not all(_text(t) for t in texts):
            errors.append(f"corrections case {case['id']!r}: every field must be a non-empty string")
        if case["id"] in seen:
            errors.append(f"corrections case {case['id']!r} appears twice")
        seen.add(case["id"])
    return errors + lookalike_errors(doc.get("lookalikes", []))


def lookalike_errors(pairs: Any) -> list[str]:
    """The optional ``lookalikes`` of the corrections set: two lessons about alike situations that
    need different advice (neither corrects the other), each pair in an agent scope of its own."""
    if not isinstance(pairs, list):
        return ["lookalikes must be a list"]
    errors, seen = [], set()
    for n, pair in enumerate(pairs):
        if not isinstance(pair, dict) or set(pair) != LOOKALIKE_KEYS or any(
                not isinstance(pair[k], dict) or set(pair[k]) != LESSON_KEYS for k in ("first", "second")):
            name = pair.get("id") if isinstance(pair, dict) else f"#{n}"
            errors.append(f"lookalike {name!r}: expected keys {sorted(LOOKALIKE_KEYS)}, each lesson {sorted(LESSON_KEYS)}")
            continue
        if not all(_text(t) for t in [pair["id"], pair["agent_id"], *pair["first"].values(), *pair["second"].values()]):
            errors.append(f"lookalike {pair['id']!r}: every field must be a non-empty string")
        if pair["id"] in seen:
            errors.append(f"lookalike {pair['id']!r} appears twice")
        seen.add(pair["id"])
    return errors


# --- one set, by name or path -------------------------------------------------------------------------

def check(target: EvalSet | str | Path) -> tuple[list[str], list[str], dict[str, Any]]:
    """(errors, warnings, counts) of a registered set, or of a blind-format file given by path."""
    es = target if isinstance(target, EvalSet) else SETS.get(str(target)) or EvalSet(str(target), Path(target), "-", "blind")
    doc = read(es.path)
    warnings: list[str] = []
    if es.format == "corrections":
        errors = corrections_errors(doc)
        return errors, warnings, {} if errors else {"cases": len(doc["cases"]), "lookalikes": len(doc.get("lookalikes", []))}
    if es.format == "heldout-tasks":
        errors = heldout_errors(doc)
        counts = {} if errors else {"families": len(doc["tasks"]),
                                    "tasks": sum(len(t) for t in doc["tasks"].values())}
        return errors, warnings, counts
    errors = set_errors(doc, warnings)
    if errors:
        return errors, warnings, {}
    shapes_path = es.path.parent / "shapes.json"
    shapes = read(shapes_path) if shapes_path.exists() else None
    if shapes is not None:
        errors = shapes_errors(shapes, doc)
    return errors, warnings, {} if errors else stats(doc, shapes)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.sets", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sets", nargs="*", help=f"set names ({', '.join(SETS)}) or paths of blind-format files (default: every set)")
    args = p.parse_args(argv)
    failed = 0
    for target in args.sets or list(SETS):
        errors, warnings, counts = check(target)
        print(f"== {target}")
        for line in warnings:
            print("WARN", line)
        for line in errors:
            print("ERROR", line)
        print(json.dumps(counts, sort_keys=True))
        print("OK" if not errors else f"{len(errors)} error(s)")
        failed += bool(errors)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
