"""Untrusted text made inert before it reaches another prompt.

Lessons are written from what agents sent (errors, feedback, values, tool names) and are then
injected into agents' prompts. Whatever a trajectory held, an advice item must read as one line
of data inside the block: it cannot end the block, start a numbered item or a new turn, speak as
a role, or hide characters a reader does not see.
"""
from __future__ import annotations

import re
import unicodedata

# Characters that render as nothing or move text around: controls, format characters (zero-width
# joiners, bidi overrides, the BOM, soft hyphen), surrogates, private use, unassigned.
_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn"})
_SPACE_LIKE = re.compile(r"[\s\u2028\u2029\u0085]+")
# Angle-bracket look-alikes that NFKC leaves alone, around the block's own tag name.
_OPEN = "<\u2039\u27e8\u3008\u2329\u276e\u276c\u300a\u29fc"
_CLOSE = ">\u203a\u27e9\u3009\u232a\u276f\u276d\u300b\u29fd"
_TAG = re.compile(rf"[{_OPEN}]\s*/?\s*hindsight\s*[{_CLOSE}]?", re.I)
# Chat-template tokens of the common model families: <|im_start|>, <|eot_id|>, [INST], <<SYS>>,
# <s>, </s>, <start_of_turn>, <end_of_turn>.
_TEMPLATE = re.compile(
    r"<\|[^|<>]{0,40}\|>|\[/?\s*INST\s*\]|<</?\s*SYS\s*>>|</?s>|<(?:start|end)_of_turn>",
    re.I,
)
# A role speaking: "SYSTEM:", "assistant :", "### Instruction:".
_ROLE = re.compile(
    r"(?:#+\s*)?\b(system|assistant|developer|user|human|instructions?|tool|function)\s*:",
    re.I,
)

MAX_ITEM_CHARS = 600


def visible(text: str) -> str:
    """NFKC-normalised text without invisible characters, its whitespace runs made one space."""
    if text.isascii() and text.isprintable():
        # NFKC leaves printable ASCII as it is, and it holds no invisible character: a lesson's
        # usual text takes no pass per character
        return _SPACE_LIKE.sub(" ", text).strip()
    return _visible_by_character(text)


def _visible_by_character(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    kept = []
    for ch in text:
        if ch.isspace():
            kept.append(" ")
        elif unicodedata.category(ch) not in _INVISIBLE:
            kept.append(ch)
    return _SPACE_LIKE.sub(" ", "".join(kept)).strip()


def inert_line(text: str, max_chars: int = MAX_ITEM_CHARS) -> str:
    """One line of plain data: no tag of the block, no template token, no role marker, capped."""
    line = visible(text)
    line = _TAG.sub("(hindsight)", line)
    line = _TEMPLATE.sub(lambda m: "(" + re.sub(r"[<>|\[\]/]", "", m[0]).strip() + ")", line)
    line = line.replace("<|", "(").replace("|>", ")")  # a token cut by a cap before this line was made
    line = _ROLE.sub(lambda m: f"({m[1]})", line)
    if len(line) > max_chars:
        line = line[: max_chars - 3].rstrip() + "..."
    return line


def quoted_excerpt(text: str, max_chars: int = 160, quote: str = '"') -> str:
    """Untrusted text cited inside a lesson: inert, capped, and between quotes so it reads as data
    (``quote`` "`" for a value or a name, as code)."""
    inner = inert_line(str(text), max_chars).replace(quote, "'")
    return f"{quote}{inner}{quote}"


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.:/@+-]{1,80}")


def code(text: str, max_chars: int = 80) -> str:
    """A name or a value in backticks: the name as it is when it is a plain identifier, else the
    quoted excerpt of it."""
    text = str(text)
    return f"`{text}`" if _PLAIN_NAME.fullmatch(text) else quoted_excerpt(text, max_chars, "`")
