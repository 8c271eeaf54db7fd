"""When two tenant names are the same name.

A tenant's name is how a person, the CLI and the SDK pick a tenant: names that read alike must not
name two tenants ("Acme" and "acme", "ａｃｍｅ" in full width, "acme" with a zero-width space, "café"
composed and decomposed). Names are compared by their key: invisible characters removed (format
characters such as zero-width spaces and joiners, bidirectional marks, variation selectors,
controls), then NFKC (compatibility forms such as full width and ligatures become their plain
letters, composed and decomposed accents agree), case folded, and runs of white space made one
space. The name is kept as it was given; only the key is compared.
"""
from __future__ import annotations

import re
import unicodedata

# Default-ignorable code points that are not of category Cf (which is removed whole) or Cc
_IGNORABLE = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)


def _visible(text: str) -> str:
    text = _IGNORABLE.sub("", text)
    return "".join(c for c in text if unicodedata.category(c) not in ("Cf", "Cc") or c in "\t\n\r")


def name_key(name: str) -> str:
    """The key two names share when they read alike (``""``: a name of nothing visible)."""
    text = unicodedata.normalize("NFKC", _visible(name))
    text = unicodedata.normalize("NFKC", text.casefold())
    return " ".join(_visible(text).split())


def same_name(a: str, b: str) -> bool:
    return name_key(a) == name_key(b)
