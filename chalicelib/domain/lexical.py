"""Lexical matching (BM25), because tool names, parameter names and error strings matter and an
embedding model blurs them. The tokenizer keeps identifiers whole and also splits them into words:
``get_weather`` -> ``get_weather get weather``; ``MissingParameter`` -> ``missingparameter missing parameter``;
``#design`` -> ``#* design``.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Mapping

K1, B = 1.2, 0.4  # b below Okapi's 0.75: a long text is penalised less for its length


@dataclass(frozen=True)
class Bm25Params:
    """Okapi BM25's term-frequency saturation ``k1``, length normalisation ``b`` and the stemmer of
    ``terms``; both indexes (numpy, OpenSearch) take them from settings, so they rank alike."""

    k1: float = K1
    b: float = B
    stemmer: str = "light"  # how words become terms (``terms``): plural | light

    def __post_init__(self) -> None:
        if self.k1 < 0 or not 0.0 <= self.b <= 1.0:
            raise ValueError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, not k1={self.k1}, b={self.b}")
        if self.stemmer not in STEMMERS:
            raise ValueError(f"stemmer must be one of {sorted(STEMMERS)}, not {self.stemmer!r}")


_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
# "#design" (a channel, a tag) and "@omar" (a person) are different kinds of thing; so are their
# placeholders "#<channel>" and "@<handle>". The sigil becomes a term of its own; emails and number
# references ("#59871", "#<n>": a ticket, an issue) do not count.
_SIGIL = re.compile(r"(?<![\w@#])([#@])(?=(?!<n>)<?[A-Za-z])")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
STOPWORDS = frozenset(
    "a an and are as at be but by for from has have i if in into is it its me my of on or our so that the their "
    "then there these this to was we were what when which while will with you your do does did not no can could "
    "should would it's i'm".split()
)


def stem(word: str) -> str:
    """Plural to singular (Harman's S-stemmer): "requests" -> "request", "policies" -> "policy".
    Only plain words: identifiers ("list_channels", "v2.4.1") stay whole."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


def stem_light(word: str) -> str:
    """``stem``, then the -ing and -ed forms and a final "e" folded, so that "painted", "painting"
    and "paints" meet "paint", and "loved", "loving" and "love" meet "lov". The result is a key,
    not a word: only the same key on both sides matters. Short words ("thing", "need") keep their
    ending, identifiers stay whole."""
    word = stem(word)
    if len(word) <= 3 or not word.isalpha():
        return word
    for suffix in ("ing", "ed"):
        if len(word) > 4 and word.endswith(suffix) and not word.endswith("eed") and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if word[-1] == word[-2] and word[-1] not in "lsz":  # "stopped" -> "stop", "called" stays "call"
                word = word[:-1]
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


STEMMERS = {"plural": stem, "light": stem_light}
# Bump on any change to what ``terms`` returns: the embedded index stores each row's terms under
# this and the stemmer's name, and tokenizes again the rows stored under another (a test holds the
# terms of a fixed text to this number).
TERMS_VERSION = 1


def terms_key(stemmer: str) -> str:
    """What terms stored by an index were made by: the stemmer and ``TERMS_VERSION``."""
    return f"{stemmer}.{TERMS_VERSION}"


def terms(text: str, stemmer: str = "light") -> list[str]:
    """The BM25 terms of ``text``; ``stemmer``: ``plural`` (``stem``) or ``light`` (``stem_light``)."""
    fold = STEMMERS[stemmer]
    out: list[str] = [f"{sigil}*" for sigil in _SIGIL.findall(text)]
    for word in _WORD.findall(text):
        whole = word.lower().strip("._-")
        if not whole or whole in STOPWORDS:
            continue
        out.append(fold(whole))
        parts = [p.lower() for piece in re.split(r"[_.-]+", word) for p in _CAMEL.findall(piece)]
        if len(parts) > 1:
            out.extend(fold(p) for p in parts if p not in STOPWORDS and len(p) > 1)
    return out


def idf(df: int, n_docs: int) -> float:
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))


def scaled(scores: Mapping[str, float], fusion: str, half: float = 4.0) -> dict[str, float]:
    """BM25 scores of one query's lexical hits mapped to [0, 1] to be weighed beside cosines.

    ``saturate``: each on its own (``saturate``), so one rare term weighs the same in every query.
    ``relative``: each over the query's best plus ``half`` (``l / (max + half)``): the best match
    of this query scores near 1 when it matches well and stays low when even the best matches only
    common words. A ratio also does not depend on the backend's BM25 scale (Lucene's lacks the
    ``k1 + 1`` factor of the textbook formula the numpy index computes) beyond the damping term.
    """
    if fusion == "saturate":
        return {i: saturate(s, half) for i, s in scores.items()}
    if fusion != "relative":
        raise ValueError(f"lexical fusion must be saturate or relative, not {fusion!r}")
    best = max(scores.values(), default=0.0)
    if best <= 0:
        return {i: 0.0 for i in scores}
    return {i: max(s, 0.0) / (best + half) for i, s in scores.items()}


def saturate(score: float, half: float = 4.0) -> float:
    """BM25 is unbounded; map it to [0, 1) so it can be weighed beside cosine similarity.
    ``half``: the score that maps to 0.5 (about one rare term, or a few common ones)."""
    return score / (score + half) if score > 0 else 0.0
