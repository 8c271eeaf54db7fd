"""Writes ../families.json from the hand-written parts (run: python src/build.py) and prints
the counts the README quotes (trajectory shapes, how much of the why is said, outcomes, events)."""
import collections
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import dsl  # noqa: E402
import part1, part2, part3, part4  # noqa: E402

SHAPE_NAMES = {
    # how the trace goes
    "fail-fix-reasoned",   # an error, the agent reasons about it, then the fix
    "fail-fix-silent",     # an error, then the fix with no reasoning in between
    "explain-after",       # the agent explains the fix only after it worked
    "rule-first",          # clean success: the agent states the rule before acting, no failure
    "user-corrects",       # the user corrects the agent in the middle
    "blind-retries",       # identical retries end in failure; the feedback says what was wrong
    "wrong-alt",           # a wrong alternative is tried first
    "long-noisy",          # a long trace (>= 9 events) with irrelevant steps around the key one
    "asks-user",           # the agent asks the user a question and acts on the answer
    "fail-feedback",       # one failed call, then the user's feedback names the fix (no retry)
    "clean-silent",        # a clean success with no failure and no words: only the calls and their results
    # what makes it hard
    "generic-error",       # the failing call's error says nothing specific ("400 Bad Request")
    "value-from-result",   # the fix uses a value read from an earlier tool result
    "two-lessons",         # two separate lessons in one trajectory
    # how much of the why is said
    "note-terse",          # one short sentence of why
    "note-rambling",       # a long note with the why buried in it
    "note-user-words",     # the why only in the user's own words
    "why-in-result",       # the why only in a tool result's text or a state_change
    "no-note",             # no why at all: only the calls
}

families = part1.FAMILIES + part2.FAMILIES + part3.FAMILIES + part4.FAMILIES
out = os.path.join(os.path.dirname(HERE), "families.json")
with open(out, "w", encoding="utf-8") as fh:
    json.dump({"version": 1, "families": families}, fh, ensure_ascii=False, indent=1)
    fh.write("\n")
print(f"wrote {len(families)} families to {out}")

shapes = collections.Counter()
for shape, _ in dsl.SHAPES:
    for s in shape.split("+"):
        if s not in SHAPE_NAMES:
            sys.exit(f"unknown shape {s!r}")
        shapes[s] += 1
n_traj = sum(len(f["train"]) for f in families)
if len(dsl.SHAPES) != n_traj:
    sys.exit(f"{n_traj} trajectories but {len(dsl.SHAPES)} recorded shapes (use TX everywhere)")
steps = [len(t["events"]) for f in families for t in f["train"]]
queries = [t["query"] for f in families for t in f["tests"]]
print("shapes", dict(sorted(shapes.items())))
print("outcomes", dict(collections.Counter(t["outcome"] for f in families for t in f["train"])))
print("events", sum(steps), "per trajectory min/max", min(steps), max(steps))
print("event types", dict(collections.Counter(e["type"] for f in families for t in f["train"] for e in t["events"])))
print("domains", len({f["domain"] for f in families}))
print("task types", dict(collections.Counter(f["task_type"] for f in families)))


def quotes_error(fam, query):
    errors = {e["content"]["error"] for t in fam["train"] for e in t["events"]
              if e["type"] == "tool_call" and e["content"]["status"] == "error"}
    return any(err.lower() in query.lower() for err in errors)


print("tests", len(queries), "terse (<= 80 chars)", sum(len(q) <= 80 for q in queries),
      "long (> 200 chars)", sum(len(q) > 200 for q in queries),
      "quoting an error text", sum(quotes_error(f, t["query"]) for f in families for t in f["tests"]))
print("trajectories per family", dict(collections.Counter(len(f["train"]) for f in families)))
