"""What a query says is not the case (a NegEx-style scope rule), so that recall does not match a
lesson on the very words the query denies: "renewal refused, the patron owes nothing" is not the
situation of the lesson about a patron's fines.

A cue ("no", "not", "never", "without", "n't", "nothing", ...) negates the words after it, up to a
punctuation mark, a conjunction that starts another clause ("but", "and", "because", "when", ...)
or ``MAX_SCOPE`` content words. A negative pronoun that stands as an object ("owes nothing",
"needs none") also negates the word before it: the predicate it empties. Fixed phrases that only
look negative ("not only", "no matter") negate nothing.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .lexical import STOPWORDS

MAX_SCOPE = 5  # content words a cue negates at most (NegEx's window)

_TOKEN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_'\u2019-]|\.(?=[A-Za-z0-9]))*|[.,;:!?()\[\]{}\"\u201c\u201d]|\s-+\s")
_CUES = frozenset("no not never nothing none nobody nowhere neither nor without cannot".split())
# a negative pronoun standing where an object would: it empties the predicate before it too
_PRONOUNS = frozenset("nothing none nobody nowhere".split())
# words that start another clause (or coordinate one), where a cue's scope stops
_ENDS = frozenset(
    "but however although though yet except whereas while because since as when whenever after before until "
    "unless which who whose where so then and or if once".split()
)
# phrases that only look negative: the cue negates nothing there
_PSEUDO = frozenset({
    ("not", "only"), ("not", "just"), ("no", "matter"), ("no", "doubt"), ("nothing", "but"), ("not", "necessarily"),
})


@dataclass(frozen=True)
class Negation:
    """A text split into what it asserts and what it negates (the cues themselves in neither)."""

    asserted: str
    negated: str

    @property
    def has_negation(self) -> bool:
        return bool(self.negated)


def _is_cue(word: str) -> bool:
    w = word.lower().replace("\u2019", "'")
    return w in _CUES or w.endswith("n't")


def _is_boundary(token: str) -> bool:
    return not token[0].isalnum()


def split_negation(text: str) -> Negation:
    """The words ``text`` asserts and the words it negates, each in their order; the asserted text
    keeps the punctuation between them, so it still reads as clauses."""
    tokens = [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text)]
    negated = [False] * len(tokens)
    cue = [False] * len(tokens)
    for i, (tok, _, _) in enumerate(tokens):
        if _is_boundary(tok) or not _is_cue(tok):
            continue
        nxt = tokens[i + 1][0].lower() if i + 1 < len(tokens) else ""
        if (tok.lower(), nxt) in _PSEUDO:
            continue
        cue[i] = True
        content = 0
        for j in range(i + 1, len(tokens)):
            word = tokens[j][0]
            low = word.lower()
            if _is_boundary(word) or low in _ENDS or _is_cue(word):
                break
            negated[j] = True
            if low not in STOPWORDS:
                content += 1
                if content >= MAX_SCOPE:
                    break
        if tok.lower() in _PRONOUNS and i > 0:
            prev = tokens[i - 1][0]
            if not _is_boundary(prev) and prev.lower() not in _ENDS and not _is_cue(prev) and prev.lower() not in STOPWORDS:
                negated[i - 1] = True
    drop = [(s, e) for (_, s, e), n, c in zip(tokens, negated, cue) if n or c]
    return Negation(_without(text, drop), " ".join(t for (t, _, _), n in zip(tokens, negated) if n))


def _without(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` without the character spans (in order), its whitespace runs made single spaces;
    what no token covers (symbols, sigils) stays."""
    if not spans:
        return text
    pieces, last = [], 0
    for start, end in spans:
        pieces.append(text[last:start])
        last = end
    pieces.append(text[last:])
    return " ".join("".join(pieces).split())
