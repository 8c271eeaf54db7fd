"""The cloud meter (``adapters.emf``): CloudWatch embedded metric format, one line per record."""
from __future__ import annotations

import io
import json

from chalicelib.adapters.emf import EmfMeter
from chalicelib.domain import usage


def test_a_record_is_one_emf_line_with_the_stage_dimension_and_the_tenant_as_a_property():
    out = io.StringIO()
    EmfMeter("prod", out, clock=lambda: 1_700_000_000.5).record("t_1", {usage.REQUESTS: 1, usage.RECALLS: 1})
    (line,) = out.getvalue().splitlines()
    doc = json.loads(line)
    (directive,) = doc["_aws"]["CloudWatchMetrics"]
    assert doc["_aws"]["Timestamp"] == 1_700_000_000_500
    assert directive == {"Namespace": "hindsight", "Dimensions": [["stage"]],
                         "Metrics": [{"Name": "Requests", "Unit": "Count"}, {"Name": "Recalls", "Unit": "Count"}]}
    # every dimension and metric the directive names is a member of the line, as EMF requires
    assert doc["stage"] == "prod" and doc["Requests"] == 1 and doc["Recalls"] == 1
    assert doc["tenant"] == "t_1" and "tenant" not in directive["Dimensions"][0]


def test_zero_counts_are_left_out_and_a_record_of_nothing_writes_nothing():
    out = io.StringIO()
    meter = EmfMeter("dev", out)
    meter.record("t_1", {usage.EVENTS: 0})
    meter.record(None, {usage.REVIEW_JOBS_DEAD: 1, usage.LLM_TOKENS: 0})
    (line,) = out.getvalue().splitlines()
    doc = json.loads(line)
    assert doc["_aws"]["CloudWatchMetrics"][0]["Metrics"] == [{"Name": "ReviewJobsDead", "Unit": "Count"}]
    assert "tenant" not in doc and "LlmTokens" not in doc


def test_a_write_that_fails_loses_the_count_not_the_request(caplog):
    class Broken(io.StringIO):
        def write(self, s):
            raise OSError("stdout closed")

    EmfMeter("dev", Broken()).record("t_1", {usage.REQUESTS: 1})
    assert "usage not recorded: OSError" in caplog.text
