"""Generalization: literal values become placeholders or attribute patterns, so that a lesson
learned on "Paris" carries over to the next task about "Berlin"."""
from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from typing import Any, Iterable, Mapping

from .inert import code

_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"https?://\S+"), "<url>"),
    (re.compile(r"\b[\w.+-]+@[\w-]+\.[\w.-]+\b"), "<email>"),
    (re.compile(r"(?<![\w<])(?:/[\w.-]+){2,}/?"), "<path>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), "<id>"),
    (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b", re.I), "<id>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"), "<date>"),
]
_NUMBER = re.compile(r"(?<![\w.<])\d+(?:\.\d+)?(?![\d.])")
_PLACEHOLDER_NAME = re.compile(r"[^a-z0-9_]+")


_WORD = re.compile(r"\w+")


class LiteralValues(dict[str, str]):
    """A trajectory's literal values (value -> placeholder), indexed by their words.

    A long trajectory has thousands of literals and each of its lessons' texts is generalized:
    trying every literal's pattern on every text made a review quadratic. A whole-word match of a
    literal means the text holds the literal's words in a row, so a text is matched only against
    the literals whose word sequence it holds: its cost is its own length, whatever the number of
    literals. Build it whole, then use it (the index is made on first use)."""

    _index: dict[str, list[int]] | None = None
    # numbers that are rules, not instances (``rule_numbers``): kept as they are where written
    constants: frozenset[float] = frozenset()
    _order: list[str]
    _always: list[int]  # literals without a word character: tried on every text
    _lengths: list[int]  # how many words the literals have

    def _build(self) -> dict[str, list[int]]:
        self._order = sorted(self, key=len, reverse=True)
        index: dict[str, list[int]] = {}
        self._always = []
        for rank, literal in enumerate(self._order):
            words = _WORD.findall(literal.casefold())
            if words:
                index.setdefault(" ".join(words), []).append(rank)
            else:
                self._always.append(rank)
        self._lengths = sorted({key.count(" ") + 1 for key in index})
        self._index = index
        return index

    def candidates(self, text: str) -> list[str]:
        """The literals that may occur in ``text``, longest first (as ``generalize`` tries them)."""
        index = self._index if self._index is not None else self._build()
        words = _WORD.findall(text.casefold())
        found = set(self._always)
        for n in self._lengths:
            for i in range(len(words) - n + 1):
                found.update(index.get(" ".join(words[i : i + n]), ()))
        return [self._order[rank] for rank in sorted(found)]


def generalize(text: str, values: Mapping[str, str] | None = None) -> str:
    """Replace known literal values (value -> placeholder) and then ids, urls, paths, dates, numbers
    (but the numbers ``values`` knows to be rules: ``LiteralValues.constants``)."""
    if values:
        literals = values if isinstance(values, LiteralValues) else LiteralValues(values)
        # longest first, so "New York City" wins over "York"
        for literal in literals.candidates(text):
            text = _literal(literal).sub(values[literal], text)
    for pattern, placeholder in _PATTERNS:
        text = pattern.sub(placeholder, text)
    constants = values.constants if isinstance(values, LiteralValues) else ()
    if not constants:
        return _NUMBER.sub("<n>", text)
    return _NUMBER.sub(lambda m: m[0] if float(m[0]) in constants else "<n>", text)


def numbers_in(texts: Iterable[str]) -> frozenset[float]:
    return frozenset(float(n) for t in texts for n in _NUMBER.findall(t))


def rule_numbers(stated: Iterable[str], task: Iterable[str]) -> frozenset[float]:
    """The numbers a trajectory states only in what the environment or the agent said (an error,
    the agent's reasoning: "divide by 15", "E-214", "holds expire in 10 min") and nowhere in the
    task's own data (``task``: what the user said, the calls' parameters and results). A number
    of the task is an instance, generalized like any literal; one only stated is the rule a
    lesson must keep. A number the trajectory does not hold at all (a model's lesson inventing
    one) is generalized: a lesson keeps nothing its trajectory does not support."""
    return numbers_in(stated) - numbers_in(task)


# a value in lowercase letters only, one word or a few joined by spaces or underscores ("kinetic",
# "nightly", "external", "pending_start"), is a word of the language or an enum value: it says what
# kind of task or state it was, which is what look-alike tasks differ by. Names, codes, ids, slugs
# and numbers ("Paris", "USD", "W-90017", "eu-arena", "450") are the instances a lesson abstracts.
_KIND_WORD = re.compile(r"[a-z]+(?:[ _][a-z]+)*")


def is_kind_word(value: str) -> bool:
    """Whether a parameter value names a kind, not an instance: it is not a literal to generalize."""
    return _KIND_WORD.fullmatch(value.strip()) is not None


def names(text: str, literal: str) -> bool:
    """Whether ``text`` names ``literal`` as a whole (the match ``generalize`` replaces)."""
    return _literal(literal).search(text) is not None


@lru_cache(maxsize=4096)
def _literal(literal: str) -> re.Pattern[str]:
    """A literal as a whole word: "main" in "to main." and "origin/main", not in "main-menu"."""
    return re.compile(rf"(?<![\w<-]){re.escape(literal)}(?![\w>-])", re.I)


def literal_values(params: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Map each literal parameter value to a placeholder named after its parameter: "Paris" -> "<city>".

    Only short values are taken (names, ids, codes: at most three words): long free text such as
    a message or a query is what the task is about, not a literal to hide; so is a kind
    (``is_kind_word``: a "kinetic" read, a "nightly" suite, an "external" directory), which tells a
    task from its look-alike with the same tool and error.
    """
    out: dict[str, str] = {}
    for p in params:
        for name, value in p.items():
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                continue
            text = str(value).strip()
            if is_kind_word(text):
                continue
            if 2 <= len(text) <= 40 and len(text.split()) <= 3:
                key = _PLACEHOLDER_NAME.sub("_", str(name).lower()).strip("_") or "value"
                sigil = text[0] if text[0] in "#@$" else ""  # "#design" and "@omar" are different kinds of thing
                out.setdefault(text, f"{sigil}<{key}>")
    return out


MAX_LITERALS = 64


def literal_digests(values: Mapping[str, str], salt: str) -> dict[str, str]:
    """The literal values a lesson was generalized from, as salted digests -> placeholder.

    What it takes to tell, when a second task teaches the same lesson, which literals recur in
    every task of the kind ("main" in each push to the protected branch) and which vary (the
    branch names of the fixes): the recurring ones are part of the situation, not literals to
    hide (``recurring_literals``). Digests, so the record keeps no second copy of the values.
    """
    out: dict[str, str] = {}
    for v, p in values.items():
        if len(out) >= MAX_LITERALS:  # a long trajectory must not grow every lesson's record
            break
        out.setdefault(literal_digest(v, salt), p)
    return out


def literal_digest(value: str, salt: str) -> str:
    return hashlib.sha256(f"{salt}|{value.strip().lower()}".encode()).hexdigest()[:20]


def recurring_literals(seen: Mapping[str, str], new: Mapping[str, str]) -> dict[str, str]:
    """The literals every source so far had, in the same role (same placeholder): the least
    general generalization of the tasks keeps them and abstracts only what varies."""
    return {d: p for d, p in seen.items() if new.get(d) == p}


def _number_kind(value: int | float) -> str:
    """Whole or fractional, and the sign: what tells 1999 cents from 19.99 euros, or a refund."""
    sign = "negative " if value < 0 else ""
    if isinstance(value, int) or float(value).is_integer():
        return f"a {sign}whole number"
    return f"a {sign}decimal number"


_EXAMPLE = re.compile(r"(?<=a value like )`[^`]*`| ?\(e\.g\. [^)]*\)")
_CLAUSE_START = re.compile(r"[,:;(]\s*|\.\s+|^\s*")


def without_examples(text: str) -> str:
    """The text without the example values ``describe_value`` gave the fix: "(e.g. `2024-07-15`)",
    "a value like `hotfix/x`". They were one past task's literals; matching a new task on them is
    matching on chance (the pattern, "an ISO date YYYY-MM-DD", stays). What to avoid ("not a value
    like `main`") stays whole: the wrong value is the situation a new task may well be in."""
    out, last = [], 0
    for m in _EXAMPLE.finditer(text):
        clause = [c.end() for c in _CLAUSE_START.finditer(text, 0, m.start())]
        if text[clause[-1] if clause else 0 : m.start()].lstrip().startswith("not "):
            continue
        out.append(text[last : m.start()])
        last = m.end()
    out.append(text[last:])
    return "".join(out)


def describe_value(value: Any) -> str:
    """An attribute pattern for a parameter value, with the value as an example."""
    shape, example = value_pattern(value)
    return f"{shape} (e.g. {example})" if example else shape


def value_pattern(value: Any) -> tuple[str, str | None]:
    """A value's shape in a lesson's words ("a whole number", "a value like `x`") and the value
    as its example, where the shape does not show it already (None)."""
    if isinstance(value, bool):
        return f"`{str(value).lower()}`", None
    if isinstance(value, (int, float)):
        return _number_kind(value), str(value)
    if not isinstance(value, str):
        return "a structured value", None
    v = value.strip()
    if re.fullmatch(r"[A-Z]{2,4}", v):
        return f"a {len(v)}-letter uppercase code", code(v)
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", v):
        return "an ISO date YYYY-MM-DD", code(v)
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}[T ].+", v):
        return "an ISO timestamp", code(v[:40])
    if re.fullmatch(r"[\w.+-]+@[\w-]+\.[\w.-]+", v):
        return "an email address", None
    if re.fullmatch(r"-?\d+(?:\.\d+)?", v):
        return f"{_number_kind(float(v) if '.' in v else int(v))} in a string", code(v)
    if len(v) > 40:
        return f"a value like {code(v[:37] + '…')}", None
    return f"a value like {code(v)}", None
