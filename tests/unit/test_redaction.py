"""The log filter that masks keys: by shape, by registered value, in messages, args, extras and
tracebacks."""
from __future__ import annotations

import io
import logging
import secrets

import pytest
from hypothesis import given, settings, strategies as st

from chalicelib import redaction
from chalicelib.redaction import MASK, RedactSecrets, redact

TENANT_KEY = "hs_" + secrets.token_urlsafe(32)
ADMIN_KEY = "hsadmin_" + secrets.token_urlsafe(32)
OPENAI_KEY = "sk-proj-" + secrets.token_urlsafe(30)


@pytest.mark.parametrize("text", [
    f"Authorization: Bearer {TENANT_KEY}",
    f"{{'authorization': 'bearer {ADMIN_KEY}'}}",
    f"key={TENANT_KEY} admin={ADMIN_KEY}",
    f"api_key={OPENAI_KEY}",
    f'Response body: b\'{{"ARN": "arn:aws:secretsmanager:x", "SecretString": "whatever-shape-1", "VersionId": "v"}}\'',
])
def test_keys_are_masked_by_their_shape(text):
    out = redact(text)
    assert MASK in out
    for secret in (TENANT_KEY, ADMIN_KEY, OPENAI_KEY, "whatever-shape-1"):
        assert secret not in out


def test_a_registered_secret_of_any_shape_is_masked_and_short_ones_are_not_registered():
    odd = "correct horse battery staple " + secrets.token_hex(8)
    redaction.register(odd, "admin", None)
    assert redact(f"x {odd} y") == f"x {MASK} y"
    assert redact("the admin route") == "the admin route"


def test_ordinary_text_is_left_alone():
    text = "POST /v1/recall 200 in 12 ms; tenant t_123, key prefix hs_; the bearer of bad news; sk-learn"
    assert redact(text) == text


def capture(name: str, fmt: str = "%(levelname)s %(message)s") -> tuple[logging.Logger, io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(fmt))
    handler.addFilter(RedactSecrets())
    logger = logging.getLogger(name)
    logger.handlers[:] = [handler]
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    return logger, stream


def test_the_filter_masks_format_arguments_and_tracebacks():
    logger, stream = capture("test.redaction.args")
    logger.debug("request headers %s", {"Authorization": f"Bearer {TENANT_KEY}"})
    try:
        raise ValueError(f"bad key {TENANT_KEY}")
    except ValueError:
        logger.exception("failed")
    out = stream.getvalue()
    assert TENANT_KEY not in out
    assert out.count(MASK) == 2 and "ValueError: bad key [redacted]" in out and "Traceback" in out


def test_the_filter_masks_fields_given_as_extra():
    logger, stream = capture("test.redaction.extra", "%(message)s %(event)s")
    event = {"headers": {"authorization": f"Bearer {ADMIN_KEY}"}, "body": f'{{"api_key": "{TENANT_KEY}"}}'}
    logger.info("event", extra={"event": event})
    out = stream.getvalue()
    assert ADMIN_KEY not in out and TENANT_KEY not in out and out.count(MASK) == 2
    assert event["headers"]["authorization"] == f"Bearer {ADMIN_KEY}"  # the caller's object is not changed


def test_a_dict_message_stays_a_dict_with_its_keys_masked():
    record = logging.LogRecord("n", logging.INFO, "p", 1, {"headers": {"Authorization": f"Bearer {TENANT_KEY}"}}, None, None)
    RedactSecrets().filter(record)
    assert record.msg == {"headers": {"Authorization": f"Bearer {MASK}"}}


def by_every_pattern(text: str) -> str:
    """What redact answers without its shortcut for lines that hold no pattern's literal."""
    for value in redaction._known:
        text = text.replace(value, MASK)
    for pattern, replacement, _ in redaction._PATTERNS:
        text = pattern.sub(replacement, text)
    return text


# pieces of keys and of the words around them, in any case, beside ordinary log text
_piece = st.sampled_from(["Bearer ", "bEaReR\t", "hs_", "HS_", "hsadmin_", "sk-", "SK-", "SecretString", "secretSTRING",
                          "\"secretstring\": \"v\"", "'", "\"", ":", "=", " ", "_", "-", "POST /v1/recall 200 1.2ms ",
                          "tenant=t_1", "\u017fecretString", "\u212a", "é"])
_token = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.~+/=", min_size=0, max_size=40)


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.one_of(_piece, _token), max_size=12).map("".join))
def test_the_shortcut_answers_as_every_pattern_would(text):
    assert redact(text) == by_every_pattern(text)


def test_access_lines_pass_unchanged_and_a_key_in_a_path_does_not():
    line = "POST /v1/trajectories/h32c1-t12/events 202 1.2ms tenant=t_0123456789abcdef"
    assert redact(line) == line
    assert TENANT_KEY not in redact(f"GET /v1/experiences/{TENANT_KEY} 404 0.4ms tenant=-")


# --- control characters: quoted request input cannot forge a line ---------------------------------

FORGING = ["\n", "\r", "\x1b", "\x00", "\r\n", "\x85", "\u2028", "\u2029", "\u202e", "\x7f"]


@pytest.mark.parametrize("char", FORGING, ids=["LF", "CR", "ESC", "NUL", "CRLF", "NEL", "LS", "PS", "RLO", "DEL"])
def test_a_control_character_in_a_message_or_argument_is_escaped(char):
    logger, stream = capture(f"test.redaction.controls.{ord(char[-1])}")
    forged = f"x{char}2026-01-01 00:00:00 INFO hindsight.access POST /v1/tenants 201 1.0ms tenant=-"
    logger.info("GET /v1/experiences/%s 404", forged)
    logger.info(f"GET /v1/trajectories/{forged} 404")
    logger.info("a field", extra={"path": forged})
    out = stream.getvalue()
    assert out.count("\n") == 3 and all(c not in out for c in char if c != "\n") and "\r" not in out
    assert all(line.startswith("INFO ") for line in out.splitlines())
    assert f"\\x{ord(char[0]):02x}" in out or f"\\u{ord(char[0]):04x}" in out


def test_escaping_leaves_printable_text_of_any_script_alone():
    for text in ["POST /v1/recall 200 1.2ms tenant=t_1", "Lyon, Zürich, 東京, Ελλάδα", "a\\x0a b", ""]:
        assert redaction.escape_controls(text) == text
    assert redaction.escape_controls("a\nb\x1b[2Jc\x00\u2028") == "a\\x0ab\\x1b[2Jc\\x00\\u2028"


def test_a_traceback_keeps_its_lines_and_a_dict_message_its_values_escaped():
    logger, stream = capture("test.redaction.controls.tb")
    try:
        raise ValueError("bad")
    except ValueError:
        logger.exception("failed on %s", "a\nb")
    out = stream.getvalue()
    assert "failed on a\\x0ab\n" in out and "Traceback (most recent call last):\n" in out
    record = logging.LogRecord("n", logging.INFO, "p", 1, {"path": "/v1/x\n\x1b"}, None, None)
    RedactSecrets().filter(record)
    assert record.msg == {"path": "/v1/x\\x0a\\x1b"}
