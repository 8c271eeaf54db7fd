"""``corrections.restates``: a human lesson about another's situation in other words, answering
what the other's advice said."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from chalicelib.domain.corrections import restates
from chalicelib.domain.models import Experience

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def lesson(situation: str, advice: str) -> Experience:
    return Experience(tenant_id="t", experience_id=situation + advice, situation=situation, action="", result="",
                      lesson=advice, advice=advice, created_at=NOW, updated_at=NOW, renewed_at=NOW)


def test_a_broader_rewording_that_answers_the_old_advice_restates_it() -> None:
    old = lesson("Formatting dates in the public API responses", "Return dates as DD/MM/YYYY strings.")
    new = lesson("Date format of the public API", "Return ISO 8601 timestamps; clients misread DD/MM/YYYY.")
    assert restates(new, old)
    assert not restates(old, new)  # the other way round the new one is narrower


@pytest.mark.parametrize(("old", "new"), [
    (("Formatting dates in the public API responses", "Return dates as DD/MM/YYYY strings."),
     ("Date format of the public API", "Use the ISO standard.")),  # says nothing of what the old advice said
    (("Formatting dates in the public API responses", "Return dates as DD/MM/YYYY strings."),
     ("API dates", "Never DD/MM/YYYY.")),  # too short to tell which lesson it rewords
    (("Formatting dates in the public API responses", "Return dates as DD/MM/YYYY strings."),
     ("Formatting dates in the admin console", "Never DD/MM/YYYY.")),  # another place
    (("Adding logs to the ingestion worker for failed batches", "Log each failed batch with its id."),
     ("Adding logs to the ingestion worker", "Log with the request id.")),  # the old one is about its special case
    (("Weather lookup case 0", "Ask for the city first, variant 0."),
     ("Weather lookup case 3", "Ask for the city first, variant 3.")),  # the same advice: only a number changed
])
def test_what_does_not_restate(old, new) -> None:
    assert not restates(lesson(*new), lesson(*old))
