"""Keys never reach a log line, and request input never forges one: a logging filter that masks
keys and escapes control characters, whatever logged them.

Nothing of ours logs a key. This is the net under what we do not control at DEBUG: botocore logs
response bodies (Secrets Manager's ``SecretString``: the admin key, the OpenAI key), an SDK may log
request headers, an exception's message may quote its input. Masked:

* the values registered with ``register`` (the admin key and the OpenAI key, once resolved);
* anything shaped like a key: ``Bearer <token>``, ``hs_...`` tenant keys, ``hsadmin_...`` admin
  keys, ``sk-...`` OpenAI keys, a ``SecretString`` field.

Control characters are escaped (``escape_controls``) in the message and in every extra field: a
request path holding ``%0a``, ``%0d``, ``%1b`` or ``%00`` (decoded into the access line) would
otherwise start a line of its own, rewrite the terminal or cut the line short. A newline becomes
``\\x0a``, so every record stays one line; a traceback keeps its lines.

``install`` puts the filter on every handler of the root logger (records of child loggers reach
handlers without passing the root logger's own filters) and on any logger given, such as the
Powertools logger, whose records do not go through the root logger's handlers.
"""
from __future__ import annotations

import logging
import re
import threading
from typing import Any

MASK = "[redacted]"
MIN_SECRET_LENGTH = 12  # a shorter configured value ("admin" in a demo) would mask ordinary words

# (pattern, replacement, the literals one of which any match holds: lower case where the pattern
# ignores case). A line holding none of any pattern's literals is left as it is (``redact``).
_PATTERNS = [
    (re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"), rf"\g<1>{MASK}", ("bearer",)),
    (re.compile(r"\b(?:hs|hsadmin)_[A-Za-z0-9_-]{16,}"), MASK, ("hs_", "hsadmin_")),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), MASK, ("sk-",)),
    (re.compile(r"(?i)(['\"]?SecretString['\"]?\s*[:=]\s*)(['\"])(?:\\.|(?!\2).)*\2"), rf"\g<1>\g<2>{MASK}\g<2>",
     ("secretstring",)),
]
_NEEDLES = tuple((literal, bool(pattern.flags & re.IGNORECASE)) for pattern, _, literals in _PATTERNS for literal in literals)
# attributes every LogRecord has; anything else came in through ``extra=`` and is masked too
_STANDARD = set(vars(logging.LogRecord("n", logging.INFO, "p", 1, "m", None, None))) | {"message", "asctime"}

# C0 and C1 controls, DEL, the Unicode line and paragraph separators, and the marks that reorder or
# hide text (bidirectional overrides and isolates, zero-width characters, the byte order mark)
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """``text`` with each control character written as its escape (a newline as ``\\x0a``):
    quoted request input cannot start a line, move the cursor or hide what follows."""
    if text.isprintable():  # no control of any kind: most lines, checked at C speed
        return text
    return _CONTROLS.sub(_escaped, text)


_lock = threading.Lock()
_known: tuple[str, ...] = ()


def register(*values: str | None) -> None:
    """Mask these exact values from now on (secrets of any shape: a configured admin key)."""
    global _known
    with _lock:
        found = {v for v in values if v and len(v) >= MIN_SECRET_LENGTH}
        # longest first: a secret that contains another is masked whole
        _known = tuple(sorted(set(_known) | found, key=len, reverse=True))


def redact(text: str) -> str:
    for value in _known:
        if value in text:
            text = text.replace(value, MASK)
    if text.isascii():
        # No pattern matches without one of its literals: most lines (each request's access line)
        # hold none, and four searches cost more than writing the line. ASCII only: there lower()
        # folds case as the patterns' IGNORECASE does.
        lower = text.lower()
        if not any(literal in (lower if folded else text) for literal, folded in _NEEDLES):
            return text
    for pattern, replacement, _ in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def clean(text: str) -> str:
    """What a log line may show of ``text``: keys masked, control characters escaped."""
    return escape_controls(redact(text))


def _redact_value(value: Any) -> Any:
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {k: _redact_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_redact_value(v) for v in value)
    if isinstance(value, bytes):
        return clean(value.decode("utf-8", "replace"))
    return value


class RedactSecrets(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, (dict, list)) and not record.args:
            record.msg = _redact_value(record.msg)  # Powertools logs a dict message as JSON: keep it one
        else:
            try:
                message = record.getMessage()
            except Exception:  # a broken format string: leave it to the handler to report
                return True
            if not isinstance(record.msg, str) or record.args or clean(message) != message:
                record.msg, record.args = clean(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        for name, value in list(vars(record).items()):
            if name not in _STANDARD:
                setattr(record, name, _redact_value(value))
        return True


_FILTER = RedactSecrets()


def install(*loggers: logging.Logger) -> None:
    """Add the filter (once) to the root logger's handlers and to the given loggers."""
    for target in [*logging.getLogger().handlers, *loggers]:
        if _FILTER not in target.filters:
            target.addFilter(_FILTER)
